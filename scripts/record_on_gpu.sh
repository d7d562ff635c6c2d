#!/bin/bash
# On a GPU machine: build memsnap from carried Debian packages (scripts/gpu_host_build.sh), then
# record the named cases of scripts/record_snapshots.py, each also under `memsnap record` in the
# same process, and verify every recording with the model. Everything lands in OUT/rec.tar.gz
# (pickles, truths, .zst traces, logs) and OUT/verify.txt.
# usage: scripts/record_on_gpu.sh DEBS BUILD_DIR OUT CASE...
set -uo pipefail
debs=$1 build=$2 out=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
bash "$here/scripts/gpu_host_build.sh" "$debs" "$build" || exit 1
build=$(cd "$build" && pwd)
export LD_LIBRARY_PATH=$build/deps-root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ms=$build/cli/memsnap
rec=$out/rec
mkdir -p "$rec"
python3 "$here/scripts/record_snapshots.py" "$@" --out "$rec" --memsnap "$ms" --deadline 480 \
	>"$rec/record.log" 2>&1
rm -f "$rec"/*.zst.[0-9]* # compile workers' own (empty) recordings
for n in "$@"; do
	for f in "$rec/$n.pickle" "$rec/$n.zst"; do
		[ -e "$f" ] || continue
		echo "== $(basename "$f")"
		"$ms" verify "$f" 2>&1 | head -20
		"$ms" -q replay --json "$f" 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("pools", [(tuple(p["id"]), p["peak_reserved_bytes"], p["reserved_bytes_at_end"]) for p in r["pools"]],
      "peak reserved", r["peak_reserved_bytes"], "allocated", r["peak_allocated_bytes"],
      "unknown", r["allocations_pool_unknown"], "private", r["allocations_in_private_pools"])'
	done
done >"$out/verify.txt" 2>&1
tar czf "$out/rec.tar.gz" -C "$out" rec
tail -40 "$rec/record.log"
cat "$out/verify.txt"
