#!/bin/bash
# GPU validation of replay --backend cuda and torch, on a machine with an NVIDIA GPU
# and PyTorch: every real trace replayed with the model over the real device (cuda; verify
# compares it with the recording) and through PyTorch's own caching allocator (torch; verify
# compares it with the model) must give the same
# segment events and peaks as the model (sim) and as the truth file of what PyTorch reported
# when it was recorded; dynamic_oom must reproduce its OOM at the recorded entry under the
# truth's limit. Prints a markdown report (docs/gpu-validation.md holds the last one).
# usage: tests/gpu/replay_gpu.sh BUILD_DIR SNAPSHOT_DIR OUT_DIR
# (BUILD_DIR has lib/memsnap/libmemsnap_torch_replay.so; SNAPSHOT_DIR the pickles and truths)
set -uo pipefail
build=$(cd "$1" && pwd) snaps=$(cd "$2" && pwd) out=$3
ms=$build/cli/memsnap
py=${PYTHON:-python3}
mkdir -p "$out"
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	echo "SKIP: no GPU with PyTorch"; exit 77
fi
fails=0
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); CUDA runtime of PyTorch $("$py" -c 'import torch; print(torch.version.cuda)'); PyTorch $("$py" -c 'import torch; print(torch.__version__)')"
echo
echo "| trace | backend | reserved peak | allocated peak | requested peak | segment events | vs truth | vs model | time (s) |"
echo "|---|---|---|---|---|---|---|---|---|"
for f in "$snaps"/*.pickle; do
	name=$(basename "$f" .pickle)
	truth=$snaps/$name.truth.json
	lim=()
	if [ "$name" = dynamic_oom ]; then
		lim=(--limit "$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['limit_bytes'])" "$truth")")
	fi
	for be in sim cuda torch; do
		t0=$(date +%s%N)
		"$ms" replay --json --backend $be "${lim[@]}" "$f" >"$out/$name.$be.json" 2>"$out/$name.$be.err"
		rc=$?
		t1=$(date +%s%N)
		if [ $be != sim ]; then
			"$ms" verify --backend $be "${lim[@]}" "$f" >"$out/$name.verify.txt" 2>&1
			vrc=$?
		fi
		"$py" - "$out/$name.$be.json" "$truth" "$be" "$name" "$rc" "$(( (t1 - t0) / 1000000 ))" "${vrc:-0}" "$out/$name.verify.txt" <<'PY' || fails=$((fails + 1))
import json, sys
path, truth, be, name, rc, secs, vrc, vfile = sys.argv[1:9]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"| {name} | {be} | replay failed (exit {rc}): {open(path[:-4] + 'err').read().strip()[:200]} | | | | | | |")
    sys.exit(1)
t = json.load(open(truth))["stats"]
tj = json.load(open(truth))
keys = [("peak_reserved_bytes", "reserved_bytes.all.peak"),
        ("peak_allocated_bytes", "allocated_bytes.all.peak"),
        ("peak_requested_bytes", "requested_bytes.all.peak")]
bad = [k for k, tk in keys if r[k] != t[tk]]
if tj.get("oom_entry_index") is not None:
    o = r.get("oom") or {}
    if o.get("index") != tj["oom_entry_index"] or not o.get("recorded"):
        bad.append(f"oom at {o.get('index')} (recorded {tj['oom_entry_index']})")
vs_truth = "same" if not bad else "differs: " + ", ".join(bad)
vs_model = "-" if be == "sim" else ("same" if vrc == "0" else "DIVERGES (" + open(vfile).read().splitlines()[1].strip()[:120] + ")" if len(open(vfile).read().splitlines()) > 1 else "DIVERGES")
gib = lambda b: f"{b / 2**30:.3f} GiB"
print(f"| {name} | {be} | {gib(r['peak_reserved_bytes'])} | {gib(r['peak_allocated_bytes'])} | "
      f"{gib(r['peak_requested_bytes'])} | {len(r['segment_events'])} | {vs_truth} | {vs_model} | {int(secs) / 1000:.2f} |")
sys.exit(0 if not bad and vs_model in ("-", "same") else 1)
PY
	done
done
echo
echo "$fails row(s) differ"
exit $((fails > 0))
