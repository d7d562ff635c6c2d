# The steps explain finds on the two-GPU jobs, against the job's own count (truth.json
# steps_completed, plus the step it died in or was cut off in): memsnap's recordings run on
# through the program's teardown after the last optimizer step, which is no step. And on rank 0
# of oom_rank1, killed in step 3 (its trace cut short): what step 3 made and still held at the
# cut is activations, equal to the bytes an independent reading of the trace (converted to
# PyTorch's JSON) finds allocated since step 3 began and alive at the peak; its peaks are lower
# bounds in explain and replay. (Rank 0 left no truth of its own: the ranks step together, so its
# steps are rank 1's, which died in step 3 too.)
M=testdata/snapshots/multi_gpu
for f in $M/ddp_rank1.zst $M/ddp_rank1.pickle.zst $M/fsdp2_rank0.zst $M/pipeline.zst \
	$M/oom_rank1_rank1.zst $M/oom_rank1_rank1.pickle.zst $M/oom_rank1_rank0.zst; do
	b=${f##*/}
	tag=${b%.zst}
	tag=${tag%.pickle}
	"$MEMSNAP" -q explain --json "$f" >"$TMPDIR/x.json" 2>/dev/null
	python3 - "$M/$tag.truth.json" "$TMPDIR/x.json" "$b" <<'PY'
import json, sys
t, x, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
devs = [x] if "steps" in x else list(x["devices"].values())
if "steps_completed" not in t:
    t["steps_completed"] = json.load(open(sys.argv[1].replace("_rank0.", "_rank1.")))["steps_completed"]
want = t["steps_completed"] + (1 if t.get("oom") or t.get("exit") not in (None, 0) else 0)
got = {len(d["steps"]) for d in devs}
print("%-26s steps %s" % (name, "as the job ran them (%d)" % want if got == {want}
                          else "DIFFER: %s, the job %d" % (sorted(got), want)))
PY
done
f=$M/oom_rank1_rank0.zst
"$MEMSNAP" -q explain --json "$f" >"$TMPDIR/x.json" 2>/dev/null
"$MEMSNAP" -q replay --json "$f" >"$TMPDIR/r.json" 2>/dev/null
"$MEMSNAP" -q convert "$f" -o "$TMPDIR/t.json" 2>/dev/null
python3 - "$TMPDIR/x.json" "$TMPDIR/r.json" "$TMPDIR/t.json" <<'PY'
import json, sys
x, r, t = (json.load(open(p)) for p in sys.argv[1:])
peak, s3 = x["peak"]["event"], x["steps"][-1]["first_event"]
live = {}
for i, e in enumerate(t["device_traces"][0][:peak + 1]):
    if e.get("source"):
        continue  # a raw CUDA call, not PyTorch's allocator
    if e["action"] == "alloc":
        live[e["addr"]] = (i, e["size"])
    elif e["action"] == "free_completed":
        live.pop(e["addr"], None)
since = sum(size for i, size in live.values() if i >= s3)
acts = x["categories"]["activations"]
print("oom_rank1_rank0.zst: activations at the cut %s; lower bounds: explain %s, replay %s (cut short %s)" % (
      "as allocated since step 3 began" if acts == since else "DIFFER: %d vs %d" % (acts, since),
      x["peak"]["is_lower_bound"], r["peaks_are_lower_bounds"], r["trace_cut_short"]))
PY
