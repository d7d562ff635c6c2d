# Memory held outside PyTorch in memsnap's own traces, measured: against what each job read itself
# (mem_get_info's total less free, less memory_reserved), after each optimizer step and in the OOM
# handler. A DDP rank under a limit (NCCL's buffers and the CUDA context, which no event shows),
# and a job beside a raw cudaMalloc that filled the device (its cause named with no flags: the
# trace records the device's size). On the rank, NCCL's communicator is made between the job's
# first reading and PyTorch's first segment, where the recorder's first mark is.
V=testdata/snapshots/verdicts
for job in ddp_recorded outside_recorded; do
	f=$V/${job}.zst
	[ "$job" = ddp_recorded ] && f=$V/ddp_recorded_rank1.zst
	"$MEMSNAP" -q replay --json "$f" >"$TMPDIR/r.json" 2>/dev/null
	"$MEMSNAP" -q explain --json "$f" >"$TMPDIR/e.json" 2>/dev/null
	python3 - "$job" "$V/$job.truth.json" "$TMPDIR/r.json" "$TMPDIR/e.json" <<'PY'
import json, sys
job, t, r, e = sys.argv[1], *(json.load(open(p)) for p in sys.argv[2:])
run = t.get("recorded_rank1") or t["recorded"]
steps = [s["total"] - s["free"] - s["reserved"] for s in run["outside_after_steps"]]
m = r["outside_pytorch_measured"]
# the first mark: at PyTorch's first segment; the job read the device just before its work began
free, total = run["mem_get_info_at_start"]
start = total - free - run["reserved_at_start"]
print(job, "first mark, at PyTorch's first segment:", m["first_bytes"], "the job's reading at its start:",
      start, "equal" if m["first_bytes"] == start else "more by %d" % (m["first_bytes"] - start))
if steps:
    print(job, "marks after the first", m["marks"] - 1, "of", len(steps), "steps;",
          "each the job's own reading" if m["marks"] - 1 == len(steps) and
          m["last_bytes"] == steps[-1] and m["highest_bytes"] == max(steps + [m["first_bytes"]])
          else "DIFFERENT: %s vs %s" % (m, steps))
    print(job, "at the peak:", e["outside_pytorch_is"],
          "ok" if e["categories"]["outside_pytorch"] in steps else "NOT A MEASURED FIGURE")
a = run["at_oom"]
truth = a["mem_get_info"]["total"] - a["mem_get_info"]["free"] - a["reserved"]
o = e["oom"]
print(job, "at the OOM:", "equal to the job's own reading" if o["outside_pytorch_bytes"] == truth
      else "DIFFERENT %s vs %s" % (o["outside_pytorch_bytes"], truth))
want = (t.get("expect") or {}).get("cause")
print(job, "cause", o["cause"], "device_full", o["device_full"],
      "" if not want else "as built" if o["cause"] == want else "NOT " + want)
PY
done
# As users run it, no flags: the recording knows the device's size, so each setting gets a plain
# answer, held against the outside job's reruns (the same job and hold, run again under each
# setting: every one died)
"$MEMSNAP" -q whatif --json "$V/outside_recorded.zst" | python3 -c '
import json, sys
w, t = json.load(sys.stdin), json.load(open(sys.argv[1]))
real = {("" if k == "(defaults)" else k): v for k, v in t["rerun_outcome"].items()}
bad = [s["alloc_conf"] for s in w["settings"] if {"yes": "finishes", "no": "dies"}.get(s["survives"]) != real[s["alloc_conf"]]]
print("outside_recorded, no flags:", len(w["settings"]), "settings,", "each as the reruns did" if not bad else "NOT AS THE RERUNS: %s" % bad)' "$V/outside.truth.json"
