#!/bin/bash
# replay backends on a GPU: events/s of sim, cuda and torch on a long trace (copies of
# the real dynamic_seq run, time-shifted; bench_parse long), whole commands, best of 3; then the
# driver calls' latencies as `replay --backend cuda` measured them on dynamic_seq (cudaMalloc /
# cudaFree) and dynamic_expandable (the virtual memory calls).
# usage: bench/backends_gpu.sh BUILD_DIR SNAPSHOT_DIR OUT_DIR [COPIES]
set -euo pipefail
build=$(cd "$1" && pwd) snaps=$(cd "$2" && pwd) out=$3 copies=${4:-30}
ms=$build/cli/memsnap
mkdir -p "$out"
"$build/bench/bench_parse" long "$snaps/dynamic_seq.pickle" "$out/long.zst" "$copies" >/dev/null
n=$("$ms" info --json "$out/long.zst" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events_total"])')
echo "long trace: $n events ($copies copies of dynamic_seq)"
echo
echo "| backend | best of 3 (s) | events/s |"
echo "|---|---|---|"
for be in sim cuda torch; do
	best=
	for i in 1 2 3; do
		t0=$(date +%s%N)
		"$ms" replay --backend $be --json "$out/long.zst" >"$out/long.$be.json" 2>"$out/long.$be.err" || true
		t1=$(date +%s%N)
		ms_=$(( (t1 - t0) / 1000000 ))
		if [ -z "$best" ] || [ "$ms_" -lt "$best" ]; then best=$ms_; fi
	done
	python3 -c "import sys; n, ms = int(sys.argv[1]), int(sys.argv[2]); print(f'| {sys.argv[3]} | {ms/1000:.2f} | {n/(ms/1000)/1e6:.2f} M |')" "$n" "$best" "$be"
done
for t in dynamic_seq dynamic_expandable; do
	"$ms" replay --backend cuda --json "$snaps/$t.pickle" >"$out/lat.$t.json"
	echo
	echo "driver calls, replay --backend cuda $t:"
	echo
	echo "| call | count | p50 (µs) | p99 (µs) | max (µs) | total (ms) |"
	echo "|---|---|---|---|---|---|"
	python3 - "$out/lat.$t.json" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1]))["cuda"]["driver_calls"]:
    print(f"| {c['call']} | {c['count']} | {c['p50_us']:.1f} | {c['p99_us']:.1f} | {c['max_us']:.1f} | {c['total_ms']:.2f} |")
PY
done
