#!/bin/bash
# The recorder's GPU tests, on a machine with an NVIDIA GPU and PyTorch:
#   1. a transformer training loop recorded with both sources: the trace reads, `memsnap
#      verify` passes, its PyTorch events equal those of PyTorch's _record_memory_history for
#      the same run, and raw CUDA events are there too;
#   2. the same with Python stacks: the allocation sites are train.py's lines;
#   3. expandable segments: segment_map events from PyTorch and from the interposer;
#   4. a script that dies of CUDA OOM: memsnap record keeps its exit code, and the replay of
#      its trace reproduces the OOM at the recorded event;
#   5. SIGKILL in the middle of training leaves a readable trace.
# usage: tests/gpu/record_gpu.sh BUILD_DIR OUT_DIR   (BUILD_DIR has lib/memsnap/libmemsnap_torch.so)
# Exit 0 if all pass; prints PASS/FAIL per check. Skips (77) without a GPU.
set -uo pipefail
build=$(cd "$1" && pwd) out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
ms=$build/cli/memsnap
py=${PYTHON:-python3}
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	echo "SKIP: no GPU with PyTorch"; exit 77
fi
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

echo "== 1. training loop, both sources, against PyTorch's own history"
"$ms" record -o "$out/train.zst" -- "$py" "$here/train.py" --steps 10 --compare "$out/train_torch.pickle"
check "record exits 0" test $? -eq 0
"$ms" info "$out/train.zst" | tee "$out/train.info"
"$ms" verify "$out/train.zst" >"$out/train.verify" 2>&1
check "verify on the recorded trace" test $? -eq 0
tail -3 "$out/train.verify"
"$ms" convert "$out/train.zst" -o "$out/train.json"
"$py" "$here/compare.py" "$out/train.json" "$out/train_torch.pickle"
check "block-level events equal _record_memory_history's" test $? -eq 0
n_raw=$("$py" -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for t in d['device_traces'] for e in t if e['action'].startswith('cuda_')))" "$out/train.json")
check "raw CUDA events recorded ($n_raw)" test "$n_raw" -gt 0

echo "== 2. Python stacks"
"$ms" record --stacks python -o "$out/stacks.zst" -- "$py" "$here/train.py" --steps 5
check "record with stacks exits 0" test $? -eq 0
"$ms" stats "$out/stacks.zst" | tee "$out/stacks.stats" | sed -n '1,40p'
check "allocation sites name train.py" grep -q "train.py" "$out/stacks.stats"

echo "== 3. expandable segments"
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$ms" record -o "$out/expandable.zst" -- \
	"$py" "$here/train.py" --steps 5
check "record (expandable) exits 0" test $? -eq 0
"$ms" verify "$out/expandable.zst" >"$out/expandable.verify" 2>&1
check "verify (expandable)" test $? -eq 0
"$ms" convert "$out/expandable.zst" -o "$out/expandable.json"
read -r maps_torch maps_raw < <("$py" -c "
import json,sys; d=json.load(open(sys.argv[1])); ev=[e for t in d['device_traces'] for e in t]
print(sum(1 for e in ev if e['action']=='segment_map'), sum(1 for e in ev if e['action']=='cuda_segment_map'))" "$out/expandable.json")
check "segment_map from PyTorch ($maps_torch) and from cuMemMap ($maps_raw)" test "$maps_torch" -gt 0 -a "$maps_raw" -gt 0

echo "== 4. a script that dies of CUDA OOM"
"$ms" record -o "$out/oom.zst" -- "$py" "$here/oom.py" 2>"$out/oom.stderr"
rc=$?
tail -2 "$out/oom.stderr"
check "memsnap record keeps the script's exit code (1)" test $rc -eq 1
"$ms" convert "$out/oom.zst" -o "$out/oom.json"
oom_at=$("$py" -c "
import json,sys; d=json.load(open(sys.argv[1])); ev=d['device_traces'][0]
print(next(i for i,e in enumerate(ev) if e['action']=='oom'))" "$out/oom.json")
"$ms" replay --json "$out/oom.zst" >"$out/oom.replay.json"
rc=$?
"$ms" replay "$out/oom.zst" 2>&1 | head -8
check "replay reproduces the recorded OOM (exit 0)" test $rc -eq 0
rep_at=$("$py" -c "import json,sys; o=json.load(open(sys.argv[1]))['oom']; print(o['index'] if o['recorded'] else -1)" "$out/oom.replay.json" 2>/dev/null)
check "replay's OOM at the recorded event ($rep_at = $oom_at)" test "$rep_at" = "$oom_at"

echo "== 5. SIGKILL in the middle of training"
"$ms" record -o "$out/kill.zst" -- "$py" "$here/train.py" --steps 100000 &
rec=$!
sleep 12
pkill -KILL -f "train.py --steps 100000"
wait $rec
rc=$?
check "memsnap record reports the kill (137)" test $rc -eq 137
"$ms" info "$out/kill.zst" 2>&1 | tee "$out/kill.info"
n=$("$ms" info --json "$out/kill.zst" 2>/dev/null | sed -n 's/.*"events_total":[[:space:]]*\([0-9]*\).*/\1/p')
check "the killed run's trace reads ($n events)" test "${n:-0}" -gt 1000

echo "== $fails failure(s)"
exit $((fails > 0))
