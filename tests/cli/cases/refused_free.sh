# torch.cuda.empty_cache() inside a capture begun with capture_begin: PyTorch records the freeable
# graph pool's segment freed, the driver refuses the cudaFree on the capturing stream, the call
# raises and the segment stays; the capture fails and the allocator goes on as if it were
# underway (the next empty_cache() gives that segment back, not the default pool's free one).
# The real recording (its interposer saw no cudaFree after the refused free), the same with an
# allocation and free between the refused free and the next call (edge/refused_free_flushed, made
# by scripts/make_refused_free_edge.py), and as a snapshot has it, without the interposer's events
# and the recorder's marks, where only the second free of the same segment tells
# (edge/refused_free_snapshot). Against PyTorch's counts (truth.json): cudaMalloc and cudaFree
# calls (the refused one counted, as PyTorch does), reserved bytes at the end.
t=testdata/snapshots/pools/graph_capture_begin_empty_cache.truth.json
for f in testdata/snapshots/pools/graph_capture_begin_empty_cache.zst \
	testdata/snapshots/edge/refused_free_flushed.json testdata/snapshots/edge/refused_free_snapshot.json; do
	echo "$(basename "$f"): $("$MEMSNAP" verify "$f" 2>/dev/null | grep -oE 'identical|DIVERGES')"
	"$MEMSNAP" -q replay --json "$f" | python3 -c '
import json, sys
r, t = json.load(sys.stdin), json.load(open(sys.argv[1]))["stats"]
ms = r["memory_stats"]
print("  refused calls", r["empty_cache_calls_refused"], "of", r["empty_cache_calls"])
for k in ("num_device_alloc", "num_device_free", "reserved_bytes.all.current"):
    print("  %s: replay %d, PyTorch %d, %s" % (k, ms[k], t[k], "equal" if ms[k] == t[k] else "DIFFERENT"))' "$t"
done
