# Jobs with private pools (CUDA graphs, torch.compile's graph trees, MemPools), recorded twice in
# one run on PyTorch 2.11: by its snapshot, whose entries do not say their pool (the end-state
# segments do), and by memsnap record, whose events carry the pool PyTorch reported. For each:
# verify's verdict on both; the replay's peaks against what PyTorch reported (truth.json); each
# pool's reserved bytes at the end of the replay against the snapshot's own segments
# (summed by Python). A MemPool deleted before the snapshot leaves nothing to tell its allocations
# by: its snapshot diverges, its recording does not. Likewise a MemPool made with no_split=True:
# its snapshot does not say so (it diverges), memsnap's recorder marks it (identical); and an open
# use_mem_pool, which keeps the allocator from giving cached segments back on another thread's
# request (mempool_scope_blocks_retry: its snapshot diverges, its recording does not), as a CUDA
# graph capture does (graph_capture_blocks_retry, the same). A recording
# goes on to the job's exit, after the pools were deleted: where the snapshot was taken before
# (mempool_no_split, mempool_on_oom_fixed and _roomy), the recording's end differs from the snapshot's.
# torch.cuda.empty_cache() inside a capture: under torch.cuda.graph, whose entry empties the cache,
# it finds nothing (graph_capture_empty_cache: identical); in a capture begun with capture_begin
# PyTorch records the freeable graph pool's segment freed, the driver refuses the cudaFree on the
# capturing stream, the call raises, the segment stays and the capture fails, leaving the
# allocator as if it were still underway (graph_capture_begin_empty_cache): the recording, whose
# interposer saw no cudaFree then, is identical; its snapshot does not say that segment's
# allocation's pool (given back before the snapshot) and diverges. A MemPool with its own allocator
# (mempool_custom_allocator) gets whole segments from it, also under expandable segments, which
# the replay learns from the recorded segment_alloc of its pool (its recording is identical; its
# snapshot, taken after the pool was deleted, diverges as mempool's).
d=testdata/snapshots/pools
for n in graph_pools compile_reduce_overhead mempool graph_step_adam graphed_callables \
	decode_graphs mempool_on_oom mempool_on_oom_fixed mempool_on_oom_roomy \
	mempool_scope_blocks_retry graph_capture_blocks_retry mempool_no_split \
	mempool_scope_blocks_retry_gc graph_capture_blocks_retry_gc \
	graph_capture_record_stream graph_capture_record_stream_reuse graph_capture_empty_cache \
	graph_capture_begin_empty_cache graph_pools_expandable \
	compile_reduce_overhead_expandable mempool_expandable graph_step_adam_expandable \
	decode_graphs_expandable mempool_custom_allocator mempool_custom_allocator_expandable; do
	echo "== $n"
	theirs=$(zstd -qdc "$d/$n.pickle.zst" | python3 -c '
import collections, json, pickle, sys
snap = pickle.load(sys.stdin.buffer)  # a snapshot of this repository, recorded by its own script
size = collections.Counter()
for s in snap["segments"]:
    k = tuple(s.get("segment_pool_id", (0, 0)))
    size[k] += s["total_size"]
t = json.load(open(sys.argv[1]))["stats"]
print("peaks", t["reserved_bytes.all.peak"], t["allocated_bytes.all.peak"], "end",
      sorted((k, size[k]) for k in size))' "$d/$n.truth.json")
	echo "PyTorch:  $theirs"
	for f in "$d/$n.pickle.zst" "$d/$n.zst"; do
		ours=$("$MEMSNAP" -q replay --json "$f" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("peaks", r["peak_reserved_bytes"], r["peak_allocated_bytes"], "end",
      sorted((tuple(p["id"]), p["reserved_bytes_at_end"])
             for p in r["pools"] if p["reserved_bytes_at_end"]))')
		if [ "$ours" = "$theirs" ]; then same="same"; else same="differs: $ours"; fi
		printf '%s: %s; %s\n' "$(basename "$f")" \
			"$("$MEMSNAP" verify "$f" 2>/dev/null | grep -oE "identical|DIVERGES")" "$same"
	done
done
# the map at the end names the pool of as many segments as the snapshot has in private pools (9)
echo "render --at end, graph_pools: $("$MEMSNAP" render --format txt --at end "$d/graph_pools.pickle.zst" 2>/dev/null | grep -c ' pool (0, 1)$') segments in pool (0, 1)"
# what-if against real runs: each job's recording replayed under expandable_segments:True against
# the same job run for real that way (its truth), and whether the two runs made the same calls
# (allocations with their sizes, streams in order of first use and pools; frees), from the two
# recordings, by Python. torch.cuda.graph empties the cache before each capture: in
# decode_graphs' default run that gave nothing back, which leaves no event, while under expandable
# segments it unmapped free pages; the recording marks each call (a torch.cuda.empty_cache phase),
# and the replay makes it there.
for n in graph_pools compile_reduce_overhead mempool graph_step_adam decode_graphs; do
	"$MEMSNAP" -q convert "$d/$n.zst" -o "$TMPDIR/a.json"
	"$MEMSNAP" -q convert "$d/${n}_expandable.zst" -o "$TMPDIR/b.json"
	"$MEMSNAP" -q replay --json --alloc-conf expandable_segments:True "$d/$n.zst" |
		python3 -c '
import json, sys
r = json.load(sys.stdin)
t = json.load(open(sys.argv[1]))["stats"]
def calls(path):
    ids, streams, out, k = {}, {}, [], 0
    for e in json.load(open(path))["device_traces"][0]:
        if e.get("source", 0):
            continue
        s = streams.setdefault(e["stream"], len(streams))
        if e["action"] == "alloc":
            ids[e["addr"]] = k
            k += 1
            out.append(("a", e["size"], s, tuple(e.get("pool_id") or ())))
        elif e["action"] in ("free_requested", "free_completed"):
            out.append((e["action"], ids.get(e["addr"])))
    return out
d = [r[a] - t[b] for a, b in (("peak_reserved_bytes", "reserved_bytes.all.peak"),
                                ("peak_allocated_bytes", "allocated_bytes.all.peak"),
                                ("peak_segments", "segment.all.peak"))]
same = calls(sys.argv[2]) == calls(sys.argv[3])
print(sys.argv[4], "under expandable segments: reserved %+d, allocated %+d, segments %+d;" % tuple(d),
      "the same calls in both runs" if same else "the runs made other calls")' \
			"$d/${n}_expandable.truth.json" "$TMPDIR/a.json" "$TMPDIR/b.json" "$n"
done
# MemPool(use_on_oom=True): the recording of mempool_on_oom_fixed marks the pool, its
# use_mem_pool and the job's 2 GiB limit (set_per_process_memory_fraction), and the replay decides
# the fallback itself; replayed with the 2.25 GiB limit of mempool_on_oom_roomy, the same job run
# for real under it, it must predict that run's peaks and segments (its truth), where the
# last three 12 MiB tensors got segments of their own
for lim in :mempool_on_oom_fixed 2415919104:mempool_on_oom_roomy; do
	limit=${lim%%:*}
	"$MEMSNAP" -q replay --json ${limit:+--limit "$limit"} "$d/mempool_on_oom_fixed.zst" |
		python3 -c '
import json, sys
r = json.load(sys.stdin)
t = json.load(open(sys.argv[1]))["stats"]
d = [r[a] - t[b] for a, b in (("peak_reserved_bytes", "reserved_bytes.all.peak"),
                                ("peak_allocated_bytes", "allocated_bytes.all.peak"),
                                ("peak_segments", "segment.all.peak"))]
print("mempool_on_oom_fixed under the limit of", sys.argv[2] + ": reserved %+d, allocated %+d, segments %+d;" % tuple(d),
      r["use_on_oom_decided"], "allocations left to the fallback; limit", r["limit_bytes"],
      "set by", r["limit_marks"], "mark(s)")' "$d/${lim#*:}.truth.json" "${lim#*:}"
done
# a snapshot cannot say which MemPool was made with no_split=True: told (--no-split-pools), the
# replay of mempool_no_split's snapshot is PyTorch's; ids it refuses, with exit code 2
echo "mempool_no_split.pickle.zst, --no-split-pools '0,1': $("$MEMSNAP" verify --no-split-pools "0,1" "$d/mempool_no_split.pickle.zst" 2>/dev/null | grep -oE 'identical|DIVERGES')"
for ids in "(0, 1) (0, 2)" "0,0" "1,2" "0,1 0" "0,x"; do
	"$MEMSNAP" verify --no-split-pools "$ids" "$d/mempool_no_split.pickle.zst" >/dev/null 2>"$TMPDIR/pools.err"
	echo "--no-split-pools '$ids': exit $?, $(head -1 "$TMPDIR/pools.err")"
done
# a pool given that the trace never uses is said (a typo in an id would otherwise pass unseen)
"$MEMSNAP" verify --no-split-pools "0,5" "$d/mempool_no_split.pickle.zst" 2>&1 >/dev/null | grep -o "pool (0, 5).*"
# the OOMs an open use_mem_pool or capture caused: explain and replay say why the cache stayed,
# with what a release would have given back
for n in mempool_scope_blocks_retry graph_capture_blocks_retry; do
	"$MEMSNAP" -q explain --json "$d/$n.zst" | python3 -c '
import json, sys
o = json.load(sys.stdin)["oom"]
print(sys.argv[1] + ": cache kept by an open pool or capture:", o["cache_kept_by_open_pool_or_capture"],
      "releasable", o["cache_releasable_bytes"])' "$n"
	"$MEMSNAP" replay "$d/$n.zst" | grep "why the cache stayed"
done
# the garbage collector runs during a capture (no check for one, unlike the last retry): the
# capture job run again under garbage_collection_threshold:0.6 had its request served inside the
# capture (the truth's outcome); the first job's recording replayed under that setting does not
# run out there, and peaks where the second run did (742 MiB reserved). The job kept the tensor it
# got and ran out at its next request; the first job had gone on without it, which the replay
# follows and says (what the job would have done with the memory no trace of it holds)
python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
print("graph_capture_blocks_retry_gc, PyTorch: inside the capture", t["outcome"]["inside"],
      "; reserved peak", t["stats"]["reserved_bytes.all.peak"], "; after it", t["outcome"]["after"])' "$d/graph_capture_blocks_retry_gc.truth.json"
"$MEMSNAP" -q replay --json --alloc-conf garbage_collection_threshold:0.6 "$d/graph_capture_blocks_retry.zst" |
	python3 -c '
import json, sys
r = json.load(sys.stdin)
print("graph_capture_blocks_retry replayed under it: recorded OOMs", r["recorded_ooms"], "reproduced",
      r["reproduced_ooms"], "; reserved peak", r["peak_reserved_bytes"],
      "; served, the job going on without it:", r["served_recorded_ooms_then_went_on"])'
# graph_capture_record_stream_reuse: PyTorch with it reused a record_stream-ed block inside the
# capture (one segment of the capture's 12 MiB tensors instead of two); the model cannot decide
# that (the graph's dependencies are in no trace), replays such frees as recorded, and says so
python3 -c '
import json, sys
print("segments in the capture, PyTorch:", [json.load(open(f))["segments_in_capture"] for f in sys.argv[1:]])' \
	"$d/graph_capture_record_stream.truth.json" "$d/graph_capture_record_stream_reuse.truth.json"
"$MEMSNAP" replay --alloc-conf graph_capture_record_stream_reuse:True "$d/graph_capture_record_stream.zst" 2>&1 >/dev/null
"$MEMSNAP" replay --alloc-conf graph_capture_record_stream_reuse:True "$d/graph_capture_record_stream_reuse.zst" 2>&1 >/dev/null
echo graph_capture_record_stream_reuse:True >"$TMPDIR/reuse.conf"
"$MEMSNAP" whatif --json --configs "$TMPDIR/reuse.conf" "$d/graph_capture_record_stream.zst" |
	python3 -c 'import json, sys; print("whatif:", [(s["alloc_conf"], s["graph_capture_record_stream_reuse_as_recorded"]) for s in json.load(sys.stdin)["settings"]])'
# explain's cached bytes at the end in private pools, against the snapshot's own segments (Python)
for n in graph_step_adam graph_pools; do
	"$MEMSNAP" -q explain --json "$d/$n.pickle.zst" >"$TMPDIR/x.json"
	zstd -qdc "$d/$n.pickle.zst" | python3 -c '
import json, pickle, sys
snap = pickle.load(sys.stdin.buffer)  # a snapshot of this repository, recorded by its own script
free = sum(s["total_size"] - s["allocated_size"] for s in snap["segments"]
           if tuple(s.get("segment_pool_id", (0, 0))) != (0, 0))
f = json.load(open(sys.argv[1]))["findings"]
print(sys.argv[2] + ": cached at the end in private pools", f["cached_at_end_in_private_pools_bytes"],
      "against the segments'"'"'", free)' "$TMPDIR/x.json" "$n"
done
# a snapshot given a use_on_oom pool keeps its allocations there, and says so
"$MEMSNAP" replay --use-on-oom-pools "0,1" --limit 2415919104 "$d/mempool_on_oom_fixed.pickle.zst" | grep "given as use_on_oom"
# a pool the recording marks, given again, is one pool, and what the recording tells is not "kept";
# a pool the trace does not use is warned of and is no pool of the replay
for a in "0,1 $d/mempool_on_oom_fixed.zst" "0,7 $d/mempool_on_oom_fixed.pickle.zst"; do
	set -- $a
	"$MEMSNAP" -q replay --json --use-on-oom-pools "$1" "$2" 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sys.argv[1], sys.argv[2].rsplit("/", 1)[-1] + ": use_on_oom pools", r["use_on_oom_pools"], "kept",
      r["use_on_oom_kept"], "pools", [p["id"] for p in r["pools"]])' "$1" "$2"
done
# traces that start mid-run: each snapshot cut at a tenth, three tenths, half and seven tenths of
# its events, replayed from the state rebuilt from its end, against the segment events PyTorch
# recorded after the cut. graph_step_adam_expandable's cuts before its last tenth diverge: the
# rebuilt expandable segments of the default pool give their pages back in another order than
# PyTorch did (a limit of rebuilding expandable segments, pools aside)
for n in graph_pools compile_reduce_overhead graph_step_adam graphed_callables decode_graphs \
	mempool_on_oom graph_pools_expandable graph_step_adam_expandable decode_graphs_expandable; do
	total=$("$MEMSNAP" -q info --json "$d/$n.pickle.zst" | python3 -c 'import json, sys; print(json.load(sys.stdin)["events_total"])')
	out=""
	for k in 1 3 5 7; do
		"$MEMSNAP" -q convert --from $((total * k / 10)) "$d/$n.pickle.zst" -o "$TMPDIR/cut.zst"
		out="$out $("$MEMSNAP" -q verify "$TMPDIR/cut.zst" 2>/dev/null | grep -oE 'identical|agrees|DIVERGES')"
	done
	echo "$n cut at 1, 3, 5, 7 tenths:$out"
done
# stats of a recording: each private pool's requested bytes (peak and end) against the same
# summed by Python over the recording's own events, each naming its pool
for n in graph_pools mempool; do
	"$MEMSNAP" -q convert "$d/$n.zst" -o "$TMPDIR/r.json"
	ours=$("$MEMSNAP" -q stats --json "$d/$n.zst" | python3 -c '
import json, sys
print(sorted((tuple(p["id"]), p["peak_requested_bytes"], p["end_requested_bytes"])
             for p in json.load(sys.stdin)["private_pools_requested"]))')
	theirs=$(python3 -c '
import json, sys
cur, peak, live = {}, {}, {}
for e in json.load(open(sys.argv[1]))["device_traces"][0]:
    if e.get("source", 0) or tuple(e.get("pool_id") or (0, 0)) == (0, 0):
        continue
    k = tuple(e["pool_id"])
    if e["action"] == "alloc":
        live[e["addr"]] = (k, e["size"])
        cur[k] = cur.get(k, 0) + e["size"]
        peak[k] = max(peak.get(k, 0), cur[k])
    elif e["action"] == "free_completed" and e["addr"] in live:
        k, z = live.pop(e["addr"])
        cur[k] -= z
print(sorted((k, peak[k], cur[k]) for k in peak))' "$TMPDIR/r.json")
	[ "$ours" = "$theirs" ] && echo "$n: stats by pool as the events say: $ours" || echo "$n: stats $ours, events $theirs"
done
