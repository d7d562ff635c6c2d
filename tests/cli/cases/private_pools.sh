# Snapshots with private pools (a CUDA graph's, a MemPool's), PyTorch 2.11: their entries do not
# say their pool, the end-state segments do. Each pool's reserved bytes and segments at the end of
# the replay against the snapshot's own segments (summed by Python), the replay's peaks against
# what PyTorch reported (truth.json), and verify's verdict. A MemPool deleted before the snapshot
# leaves no segment to tell its allocations by: mempool still diverges, and says nothing of pools.
for n in graph_pools compile_reduce_overhead mempool; do
	f=testdata/snapshots/pools/$n.pickle.zst
	echo "== $n"
	"$MEMSNAP" -q replay --json "$f" | python3 -c '
import json, sys
r = json.load(sys.stdin)
for p in r["pools"]:
    print("memsnap   pool", tuple(p["id"]), "reserved at the end", p["reserved_bytes_at_end"], "segments", p["segments_at_end"])
print("memsnap   peaks reserved", r["peak_reserved_bytes"], "allocated", r["peak_allocated_bytes"])'
	"$MEMSNAP" -q stats --json "$f" | python3 -c '
import json, sys
for p in json.load(sys.stdin)["segments"]["pools"]:
    print("stats     pool", tuple(p["id"]), "reserved at the end", p["reserved_bytes"], "segments", p["segments"])'
	zstd -qdc "$f" | python3 -c '
import collections, json, pickle, sys
snap = pickle.load(sys.stdin.buffer)  # a snapshot of this repository, recorded by its own script
size, count = collections.Counter(), collections.Counter()
for s in snap["segments"]:
    k = tuple(s.get("segment_pool_id", (0, 0)))
    size[k] += s["total_size"]
    count[k] += 1
for k in sorted(size):
    print("snapshot  pool", k, "reserved at the end", size[k], "segments", count[k])
t = json.load(open(sys.argv[1]))["stats"]
print("PyTorch   peaks reserved", t["reserved_bytes.all.peak"], "allocated", t["allocated_bytes.all.peak"])' "testdata/snapshots/pools/$n.truth.json"
	"$MEMSNAP" verify "$f" 2>&1 | grep -E "identical|DIVERGES"
done
