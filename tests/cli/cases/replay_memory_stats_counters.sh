# Every memory_stats counter (current, peak, and the cumulative allocated and freed) of the replay
# against torch.cuda.memory_stats at the end of each complete two-GPU job, per device, on the
# snapshot dumped then: the counters that differ are listed. memsnap's trace of the same run goes
# on through the process's teardown (frees, NCCL's own allocations), so of it only the peaks are
# held against those numbers.
M=testdata/snapshots/multi_gpu
for tag in ddp_rank0 ddp_rank1 fsdp2_rank0 fsdp2_rank1 pipeline; do
	for f in $M/$tag.pickle.zst $M/$tag.zst; do
		"$MEMSNAP" -q replay --json "$f" | python3 -c '
import json, sys
r, t, name = json.load(sys.stdin), json.load(open(sys.argv[1]))["end"]["by_device"], sys.argv[2]
devs = {str(r["device"]): r} if "device" in r else dict(r["devices"])
for d, x in sorted(devs.items()):
    ms, tt = x["memory_stats"], t[d]["memory_stats"]
    keys = [k for k in tt if k in ms and (name.endswith(".pickle.zst") or k.endswith(".peak"))]
    bad = [k for k in keys if ms[k] != tt[k]]
    print("%s device %s: %d counters, %d differ%s" % (name, d, len(keys), len(bad),
          (": " + ", ".join(bad)) if bad else ""))' "$M/$tag.truth.json" "${f##*/}"
	done
done
