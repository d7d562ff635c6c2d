# Would the job have survived under a setting? Each setting's `survives` (whatif --json) against
# what the job did when run again for real under it at the same limit, twice
# (testdata/snapshots/verdicts, recorded by scripts/record_verdicts.py): yes must be a setting
# whose reruns both finished, no one whose reruns both died; unknown is allowed (the trace cannot
# tell), except where the job was built to have a plain answer and memsnap knows its limit: then
# the answer must be yes or no. Each job as users run it (the limit inferred from the OOM) and
# with its limit given (or, for the full device, the device's size).
d=testdata/snapshots/verdicts
for job in frag frag_first growing rare_long outside; do
	for how in inferred given; do
		args=$(python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["recorded"]
if sys.argv[2] == "given":
    print("--limit %d" % t["limit_bytes"] if t["limit_bytes"] else "--device-memory %d" % t["total_memory"])' \
			"$d/$job.truth.json" $how)
		# shellcheck disable=SC2086
		"$MEMSNAP" -q whatif --json $args "$d/$job.pickle.zst" | python3 -c '
import json, sys
x, t, job, how = json.load(sys.stdin), json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
truth = {("" if k == "(defaults)" else k): v for k, v in t["rerun_outcome"].items()}
expect = t.get("expect") or {}
count = {"yes": 0, "no": 0, "unknown": 0}
wrong, vague = [], []
for s in x["settings"]:
    conf, sv = s["alloc_conf"], s["survives"]
    real = truth[conf]
    count[sv] += 1
    if (sv == "yes" and real != "finishes") or (sv == "no" and real != "dies"):
        wrong.append("%s: %s, the reruns %s (%s)" % (conf or "(defaults)", sv, real, s["survives_why"]))
    plain = ("saved_by" in expect and conf == expect["saved_by"]) or "growing_demand" in expect \
        or expect.get("cause") == "outside_pytorch"
    if how == "given" and plain and sv == "unknown":
        vague.append("%s: unknown where the answer is plain (%s)" % (conf or "(defaults)", s["survives_why"]))
print("%s, limit %s: yes %d, no %d, unknown %d; %d against the reruns, %d unknown where plain" % (
    job, how, count["yes"], count["no"], count["unknown"], len(wrong), len(vague)))
for w in wrong + vague:
    print("  WRONG" if w in wrong else "  VAGUE", w)
' "$d/$job.truth.json" $job $how
	done
done
# the job that a setting saves: the evidence behind its yes, in words
"$MEMSNAP" -q whatif --limit 4368367616 "$d/frag.pickle.zst" | sed -n '/^survives/,/^$/p' | grep -A1 '^  yes'
# the OOM's cause, against what PyTorch said in the job (its OOM message, the truth's): for each
# job whose limit is known, PyTorch's "allocated by PyTorch" plus its "Tried to allocate" against
# its "allowed" tells demand (more) from a fit (fragmentation or segment size); outside's device
# was full (mem_get_info's free at the OOM below the 500 MiB it tried), and with the device's size
# given the cause is the memory outside PyTorch the truth expects, undecided without it
for job in frag frag_first growing rare_long; do
	lim=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["recorded"]["limit_bytes"])' "$d/$job.truth.json")
	"$MEMSNAP" -q explain --json --limit "$lim" "$d/$job.pickle.zst" | python3 -c '
import json, re, sys
o = json.load(sys.stdin)["oom"]
msg = json.load(open(sys.argv[1]))["recorded"]["oom"]
units = {"MiB": 2**20, "GiB": 2**30, "KiB": 2**10}
def size(pat):
    m = re.search(pat, msg)
    return float(m.group(1)) * units[m.group(2)]
tried, allowed = size(r"Tried to allocate ([\d.]+) (\w+)"), size(r"([\d.]+) (\w+) allowed")
alloc = size(r"the allocated memory ([\d.]+) (\w+) is allocated by PyTorch")
# the message rounds to 0.01 of its unit: too close to call is said so
verdict = "demand" if alloc + tried > allowed * 1.002 else "fit" if alloc + tried < allowed * 0.998 else "close"
ok = (o["cause"] == "demand") == (verdict == "demand") if verdict != "close" else True
print("%s: cause %s; PyTorch: %.2f GiB allocated + %.2f GiB tried against %.2f GiB allowed (%s): %s" % (
      sys.argv[2], o["cause"], alloc / 2**30, tried / 2**30, allowed / 2**30, verdict,
      "agrees" if ok else "DISAGREES"))' "$d/$job.truth.json" $job
done
for a in "--device-memory 150109880320" ""; do
	"$MEMSNAP" -q explain --json $a "$d/outside.pickle.zst" | python3 -c '
import json, sys
o = json.load(sys.stdin)["oom"]
t = json.load(open(sys.argv[2]))
free = t["recorded"]["at_oom"]["mem_get_info"]["free"]
print("outside %s: cause %s (truth expects %s), device full %s (PyTorch: %d free after the OOM, below the 524288000 it tried: %s), outside PyTorch %s | %s" % (
      sys.argv[1] or "(no size)", o["cause"], t["expect"]["cause"], o["device_full"], free,
      free < 524288000, o["outside_pytorch_bytes"],
      o["undecided_because"] or ", ".join("%s %d" % (c["cause"], c["bytes"]) for c in o["causes"])))' "$a" "$d/outside.truth.json"
done
# the limit each job really ran under lies within the range inferred from its OOM, which never
# starts below what its segments held at once
for job in frag frag_first growing rare_long ddp_rank1; do
	"$MEMSNAP" -q replay --json "$d/$job.pickle.zst" | python3 -c '
import json, sys
x = json.load(sys.stdin)
x = x["devices"][sorted(x["devices"])[-1]] if "devices" in x else x
t = json.load(open(sys.argv[1]))
t = t.get("recorded") or t.get("recorded_rank1")
li, real = x["limit_inferred"], t["limit_bytes"]
print("%s: real limit %d, inferred %d to %d (held %d): %s" % (sys.argv[2], real, li["low_bytes"],
      li["high_bytes"], li["held_bytes"], "within" if li["low_bytes"] <= real <= li["high_bytes"] else "OUTSIDE"))' \
		"$d/$job.truth.json" $job
done
