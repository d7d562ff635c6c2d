# Snapshots whose end state has segments in private pools (a CUDA graph's, a MemPool's): replay
# and verify say that the model replays them into the default pools, and the JSON counts those
# segments as many as the snapshot holds (counted here by Python from the snapshot itself). A
# MemPool deleted before the snapshot leaves no such segment, and no warning.
for n in graph_pools compile_reduce_overhead mempool; do
	f=testdata/snapshots/pools/$n.pickle.zst
	ours=$("$MEMSNAP" -q replay --json "$f" | python3 -c 'import json, sys; print(json.load(sys.stdin)["private_pool_segments_at_end"])')
	theirs=$(zstd -qdc "$f" | python3 -c '
import pickle, sys
snap = pickle.load(sys.stdin.buffer)  # a snapshot of this repository, recorded by its own script
print(sum(1 for s in snap["segments"] if tuple(s.get("segment_pool_id", (0, 0))) != (0, 0)))')
	echo "$n: memsnap $ours, the snapshot $theirs"
	"$MEMSNAP" verify "$f" 2>&1 >/dev/null | grep -c "in private pools" || true
done
