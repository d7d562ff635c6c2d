# Every memory_stats counter of the replay against PyTorch's for each complete two-GPU job, per
# device: the current values and the cumulative allocated and freed ones against
# torch.cuda.memory_stats at the job's end (on the snapshot dumped then: memsnap's trace of the
# same run goes on through the process's teardown); the peaks of allocated, reserved, requested
# and active bytes against the highest of the job's per-step peaks (it reset the peak counters at
# each step's start, so the other peaks at its end are its last step's, and are not held here).
# The counters that differ are listed.
M=testdata/snapshots/multi_gpu
for tag in ddp_rank0 ddp_rank1 fsdp2_rank0 fsdp2_rank1 pipeline; do
	for f in $M/$tag.pickle.zst $M/$tag.zst; do
		"$MEMSNAP" -q replay --json "$f" | python3 -c '
import json, sys
r, t, name = json.load(sys.stdin), json.load(open(sys.argv[1])), sys.argv[2]
end = t["end"]["by_device"]
devs = {str(r["device"]): r} if "device" in r else dict(r["devices"])
for d, x in sorted(devs.items()):
    ms, tt = x["memory_stats"], end[d]["memory_stats"]
    peaks = {}
    for sp in t["step_peaks"]:
        for k, v in sp["by_device"].get(d, {}).items():
            peaks[k] = max(peaks.get(k, 0), v)
    keys = [k for k in tt if k in ms and not k.endswith(".peak")] if name.endswith(".pickle.zst") else []
    bad = [k for k in keys if ms[k] != tt[k]] + [k for k in peaks if ms.get(k) != peaks[k]]
    print("%s device %s: %d counters, %d differ%s" % (name, d, len(keys) + len(peaks), len(bad),
          (": " + ", ".join(bad)) if bad else ""))' "$M/$tag.truth.json" "${f##*/}"
	done
done
