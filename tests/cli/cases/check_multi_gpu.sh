# check on the two-GPU jobs, against PyTorch's own numbers: each complete rank's device passes a
# reserved budget of its real peak (the highest of the job's per-step peaks) and fails one of a
# byte less (exit 5); the rank that ran out of memory fails as a dead run whatever the budget.
M=testdata/snapshots/multi_gpu
for tag in ddp_rank0 ddp_rank1 fsdp2_rank0 fsdp2_rank1 oom_rank1_rank1; do
	peak=$(python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
d = str(t["devices_used"][0])
print(max(sp["by_device"][d]["reserved_bytes.all.peak"] for sp in t["step_peaks"] if d in sp["by_device"]))' "$M/$tag.truth.json")
	for f in $M/$tag.pickle.zst $M/$tag.zst; do
		"$MEMSNAP" -q check --max-peak-reserved "$peak" "$f" >/dev/null 2>&1
		at=$?
		"$MEMSNAP" -q check --max-peak-reserved $((peak - 1)) "$f" >/dev/null 2>&1
		below=$?
		echo "${f##*/}: at PyTorch's peak exit $at, a byte below exit $below"
	done
done
