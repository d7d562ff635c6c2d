# stats of a PyTorch 2.11 snapshot with private pools (CUDA graphs, torch.compile's graph trees),
# whose trace entries do not say their pool: the pools its end state tells, each pool's peak of
# requested bytes against Python's count (an allocation is in the pool of the end-state segment
# that holds its address; it counts until its free completes, as PyTorch's requested bytes).
for n in graph_pools compile_reduce_overhead decode_graphs graph_step_adam; do
	f=testdata/snapshots/pools/$n.pickle.zst
	ours=$("$MEMSNAP" stats --json "$f" | python3 -c '
import json, sys
print(sorted((tuple(p["id"]), p["peak_requested_bytes"]) for p in json.load(sys.stdin)["private_pools_requested"]))')
	theirs=$(zstd -qdc "$f" | python3 -c '
import bisect, pickle, sys
snap = pickle.load(sys.stdin.buffer)  # a snapshot of this repository, recorded by its own script
segs = sorted((s["address"], s["address"] + s["total_size"], tuple(s["segment_pool_id"]))
              for s in snap["segments"])
starts = [s[0] for s in segs]
def pool(a):
    i = bisect.bisect_right(starts, a) - 1
    return segs[i][2] if i >= 0 and a < segs[i][1] else None
live, cur, peak = {}, {}, {}
for e in snap["device_traces"][0]:
    if e["action"] == "alloc":
        p = pool(e["addr"])
        live[e["addr"]] = (p, e["size"])
        cur[p] = cur.get(p, 0) + e["size"]
        peak[p] = max(peak.get(p, 0), cur[p])
    elif e["action"] == "free_completed" and e["addr"] in live:
        p, size = live.pop(e["addr"])
        cur[p] -= size
print(sorted((k, v) for k, v in peak.items() if k and k != (0, 0)))')
	echo "$n: $([ "$ours" = "$theirs" ] && echo "same: $ours" || echo "memsnap $ours, Python $theirs")"
done
