#!/bin/bash
# The recordings of testdata/snapshots/real through PyTorch's own caching allocator on a GPU
# (replay --backend torch), compared with the model (verify --backend torch): the same segment
# events, peaks and end state, the program's empty_cache() calls where the model places them
# (the last one after the last allocation included).
# usage: tests/gpu/verify_torch_real.sh MEMSNAP LIBDIR [SNAPSHOT...]
# (LIBDIR holds libmemsnap_torch_replay.so; by default every real recording with a trace)
set -uo pipefail
ms=$1 libdir=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
files=("$@")
[ ${#files[@]} -gt 0 ] || files=("$root"/testdata/snapshots/real/*.pickle.zst)
fails=0
for f in "${files[@]}"; do
	lim=()
	truth=${f%.pickle.zst}.truth.json
	l=$(python3 -c "import json,sys; v=json.load(open(sys.argv[1])).get('limit_bytes'); print(v or '')" "$truth" 2>/dev/null)
	[ -n "$l" ] && lim=(--limit "$l")
	MEMSNAP_LIBDIR=$libdir timeout 300 "$ms" verify --backend torch "${lim[@]}" "$f"
	rc=$?
	echo "exit $rc: $(basename "$f")"
	[ $rc = 0 ] || fails=$((fails + 1))
done
echo "$fails of ${#files[@]} differ"
[ $fails = 0 ]
