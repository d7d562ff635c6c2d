#!/bin/bash
# The headline numbers of bench/README.md ("Whole commands"): bench/commands.py (whole commands, fresh processes, the
# alternative in the same run) over the largest real inputs.
#   long   testdata/bench/hf_gpt2_long.pickle.zst decompressed: a real 400-step GPT-2 training
#          trace (transformers, Python stacks); every command, and PyTorch's trace_plot where
#          PyTorch is installed
#   big    a 1 GB snapshot made of that trace's entries (bench/make_big_snapshot.py): info, stats
#          and Python's pickle.load, ROUNDS_BIG rounds (default 3)
#   10m    a 10.4 M-event .zst trace (bench_parse long: 150 copies of dynamic_seq): info, stats,
#          replay, render
# usage: bench/whole_commands.sh BUILD_DIR OUT_DIR [long|big|10m|all] [ROUNDS]
# Writes OUT_DIR/commands-<stage>.md. Needs Python 3 and zstd; the 1 GB stage about 8 GB of memory.
set -euo pipefail
build=$(cd "$1" && pwd) out=$2 what=${3:-all} rounds=${4:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
ms=$build/cli/memsnap
long=$out/hf_gpt2_long.pickle
# decompressed whole or not at all: an empty file left by a failed run would be read next time
unzst() { [ -s "$2" ] || { zstd -qdc "$1" >"$2.part" && mv "$2.part" "$2"; }; }
unzst "$here/testdata/bench/hf_gpt2_long.pickle.zst" "$long"
bench() { "$py" "$here/bench/commands.py" "$ms" "$@"; }
case $what in long | all)
	bench "$long" --rounds "$rounds" --out "$out/commands-long.md"
	;;
esac
case $what in big | all)
	big=$out/big-1g.pickle
	[ -e "$big" ] || "$py" "$here/bench/make_big_snapshot.py" "$long" "$big" --bytes 1G
	bench "$big" --rounds "${ROUNDS_BIG:-3}" --only python,info,stats --out "$out/commands-big.md"
	;;
esac
case $what in 10m | all)
	snap=$out/dynamic_seq.pickle
	unzst "$here/testdata/snapshots/dynamic_seq.pickle.zst" "$snap"
	[ -e "$out/long-10m.zst" ] || "$build/bench/bench_parse" long "$snap" "$out/long-10m.zst" 150 >/dev/null
	bench "$out/long-10m.zst" --rounds "$rounds" --only info,stats,replay,render \
		--out "$out/commands-10m.md"
	;;
esac
