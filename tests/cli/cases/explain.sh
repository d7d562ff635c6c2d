# memsnap explain on real training loops (testdata/snapshots/explain, recorded on an H100 with the
# truth PyTorch counted): the text of one, and of each its categories as the JSON gives them
# against PyTorch's own parameter, gradient and optimizer-state bytes (within 1%, by Python);
# a loop that keeps each step's logits, whose growth must be found at its line with PyTorch's
# bytes a step; empty_cache() in a loop; an OOM from fragmentation that a rerun under expandable
# segments avoided; a trace with an OOM under a limit inferred over a range; an OOM under a limit
# given; a mid-run trace (its memory from before the trace is unplaced, not rounding); settings
# that avoid an OOM with a higher peak (signed); and over every bundled trace, that the
# categories at the peak and the allocated bytes differ only by the blocks' rounding (within 5%).
d=testdata/snapshots/explain
"$MEMSNAP" explain "$d/adamw.pickle.zst"
for n in adamw sgd hf_gpt2 llama lightning leak; do
	for f in "$d/$n.pickle.zst" "$d/$n.zst"; do
		"$MEMSNAP" -q explain --json "$f" | python3 -c '
import json, sys
x, t = json.load(sys.stdin), json.load(open(sys.argv[1]))
m, s = t["model"], x["state"]
def near(a, b):
    return "ok" if abs(a - b) <= 0.01 * b else "%d against %d" % (a, b)
out = ["parameters " + near(s["parameter_bytes"], m["parameter_bytes"]),
       "gradients " + near(s["gradient_bytes"], m["gradient_bytes"]),
       "optimizer state " + near(s["optimizer_state_bytes"], m["optimizer_state_bytes"]),
       "steps %d of %d" % (s["optimizer_steps"], t["steps"])]
g = x["growth"]
if "leak" in t:
    out.append("growth " + (near(g[0]["bytes_per_step"], t["leak"]["bytes_per_step"]) + " at " +
                            g[0]["site"].rsplit("/", 1)[-1] if g else "not found"))
    # the job keeps one more tensor a step: as many more blocks as steps looked at, less one
    if g:
        out.append("blocks kept %d to %d (the job kept %d tensors)" % (
            g[0]["blocks_at_first_step"], g[0]["blocks_at_last_step"], t["leak"]["tensors"]))
else:
    out.append("growth %d sites" % len(g))
print(sys.argv[2] + ":", ", ".join(out))' "$d/$n.truth.json" "$(basename "$f")"
	done
done
# growth by larger shapes, not by more tensors: oom_fraction's batches grow over its first steps
# and the logits (alive at each optimizer step's start, freed with the step) grow with them; the
# job keeps no tensor across steps
"$MEMSNAP" -q explain testdata/snapshots/real/oom_fraction.pickle.zst | sed -n '/growth from step/,/^$/p'
# a ring buffer that wrapped keeps the annotations of all 16 optimizer steps (truth) but the events
# of the last three: those are the steps, numbered as the run did, and diff matches them by number
"$MEMSNAP" -q explain --json testdata/snapshots/real/ring_wrap.pickle.zst | python3 -c '
import json, sys
x, t = json.load(sys.stdin), json.load(open(sys.argv[1]))
print("ring_wrap: steps", [s["step"] for s in x["steps"]], "and", x["steps_before_trace"],
      "before the trace, of the run'"'"'s", t["steps"], "| any empty:", any(not s["peak_requested_bytes"] for s in x["steps"]))' \
	testdata/snapshots/real/ring_wrap.truth.json
"$MEMSNAP" diff testdata/snapshots/real/ring_wrap.pickle.zst testdata/snapshots/real/late_history.pickle.zst 2>/dev/null |
	sed -n '/peak requested bytes of each step/,/^$/p'
# empty_cache() after every step: the calls and the cudaMalloc calls against PyTorch's count
# (num_device_alloc, its truth)
for f in "$d/empty_cache.pickle.zst" "$d/empty_cache.zst"; do
	"$MEMSNAP" -q explain --json "$f" | python3 -c '
import json, sys
x, t = json.load(sys.stdin), json.load(open(sys.argv[1]))
f = x["findings"] if "findings" in x else x
print(sys.argv[2] + ": empty_cache every step:", f["empty_cache_every_step"], "calls", f["empty_cache_calls"],
      "of", t["empty_cache_calls"], "| cudaMalloc calls", f["cuda_malloc_calls"], "of", t["cuda_malloc_calls"])' \
		"$d/empty_cache.truth.json" "$(basename "$f")"
done
# an OOM from fragmentation that the same job run again under expandable_segments:True avoided:
# the recommendation must say so, with the peak that rerun measured (frag_oom_expandable's truth).
# The recording marks the job's 1 GiB limit; the snapshot alone infers only a range for it, within
# which the request may have fit or not, and says it cannot tell
for f in "$d/frag_oom.zst" "$d/frag_oom.pickle.zst"; do
	"$MEMSNAP" -q explain --json "$f" | python3 -c '
import json, sys
x, t = json.load(sys.stdin), json.load(open(sys.argv[1]))
o = x["oom"]
r = [r for r in x["recommendations"] if r["alloc_conf"] == "expandable_segments:True"]
print(sys.argv[2] + ": fits without fragmentation:", o["fits_without_fragmentation"],
      "| expandable_segments:True", ("avoids the OOM" if r[0]["avoids_oom"] else "does not avoid it") +
      ", peak reserved %d against the rerun'"'"'s %d" % (r[0]["peak_reserved_bytes"], t["stats"]["reserved_bytes.all.peak"])
      if r else "not recommended")' "$d/frag_oom_expandable.truth.json" "$(basename "$f")"
done
"$MEMSNAP" explain testdata/snapshots/dynamic_oom.pickle 2>&1 | sed -n '/out of memory/,$p'
"$MEMSNAP" explain testdata/snapshots/resnet50.pickle.gz 2>&1 | sed -n '1,12p'
"$MEMSNAP" -q explain --limit 600M "$d/adamw.pickle.zst" >"$TMPDIR/limited.txt"
echo "explain --limit 600M: exit $? (3: the replay ran out of memory where the recorded run did not)"
grep -E "^  note: the replay ran out|^    \(the replay ran out|^  when the replay|^    \(steps asked|^    the job asks" "$TMPDIR/limited.txt"
sed -n '/^  out of memory/,/cached_free/p' "$TMPDIR/limited.txt"
"$MEMSNAP" -q explain testdata/snapshots/real/late_history.pickle.zst | sed -n '1,6p'
"$MEMSNAP" -q explain testdata/snapshots/real/oom_outside.pickle.zst | sed -n '/what to change/,$p'
n=0
for f in testdata/snapshots/*.pickle* testdata/snapshots/real/*.pickle.zst \
	testdata/snapshots/pools/*.zst testdata/snapshots/devices/*.zst "$d"/*.zst; do
	"$MEMSNAP" -q explain --json "$f" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
for x in d.get("devices", [d]):
    if "categories" in x:
        c, a = x["categories"], x["peak"]["allocated_bytes"]
        # a MemPool(no_split=True) hands out whole blocks: the rest of each is its "rounding";
        # the snapshots of *_blocks_retry* cannot say that a use_mem_pool or a capture was open,
        # and its replay serves the request PyTorch refused (allocated is the replay'"'"'s)
        if abs(c["rounding"]) > 0.05 * a and "no_split" not in sys.argv[1] and \
                not ("blocks_retry" in sys.argv[1] and ".pickle" in sys.argv[1]):
            print("rounding beyond 5%:", sys.argv[1], x.get("device"), c["rounding"], a)' "$f"
	n=$((n + 1))
done
echo "$n traces: categories against allocated checked"
# the two ranks of a DDP job and a job that ran out of memory, compared
"$MEMSNAP" -q explain testdata/snapshots/real/ddp_gloo_rank0.pickle.zst \
	testdata/snapshots/real/ddp_gloo_rank1.pickle.zst testdata/snapshots/dynamic_oom.pickle |
	sed -n '/traces compared/,$p'
"$MEMSNAP" explain /nonexistent.pickle; echo "exit $?"
