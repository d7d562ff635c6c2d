# Every command on the two-GPU jobs (testdata/snapshots/multi_gpu), as PyTorch's snapshot and as
# memsnap's trace of the same run, against PyTorch's own numbers (truth.json): info names the
# devices the process used; verify is identical on each; whatif's recorded row and render's
# timeline (csv, each device) peak where PyTorch's counters did (the highest of the job's
# per-step peaks); on memsnap's recordings of complete jobs, replay's last measure of the memory
# outside PyTorch on each device (the recorder's cudaMemGetInfo marks) is what mem_get_info and
# memory_reserved gave at the job's end; diff of the two ranks of one job compares device 0 with device 1; and at
# rank 1's OOM, explain gives the request, the allocated and the unallocated reserved bytes of
# PyTorch's message, a limit whose range holds the one set, and (the trace) the memory outside
# PyTorch that mem_get_info gave in the job's OOM handler.
M=testdata/snapshots/multi_gpu
for f in $M/ddp_rank1.pickle.zst $M/ddp_rank1.zst $M/fsdp2_rank0.pickle.zst $M/fsdp2_rank0.zst \
	$M/pipeline.pickle.zst $M/pipeline.zst $M/late_wrap.pickle.zst $M/oom_rank1_rank1.pickle.zst \
	$M/oom_rank1_rank1.zst; do
	b=${f##*/}
	tag=${b%.zst}
	tag=${tag%.pickle}
	"$MEMSNAP" -q info --json "$f" >"$TMPDIR/info.json"
	"$MEMSNAP" -q verify --json "$f" >"$TMPDIR/verify.json"
	"$MEMSNAP" -q whatif --json "$f" >"$TMPDIR/whatif.json"
	"$MEMSNAP" -q replay --json "$f" >"$TMPDIR/replay.json" 2>/dev/null
	for d in 0 1; do
		"$MEMSNAP" -q render --device $d "$f" -o "$TMPDIR/r$d.csv" 2>/dev/null || rm -f "$TMPDIR/r$d.csv"
	done
	python3 - "$M/$tag.truth.json" "$TMPDIR" "$b" <<'PY'
import csv, json, os, sys
t, tmp, name = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
def load(n):
    return json.load(open(os.path.join(tmp, n)))
def per_device(j):
    return {str(j["device"]): j} if "device" in j else dict(j["devices"])
peak = {}
for sp in t["step_peaks"] + [t.get("at_oom") and {"by_device": {
        d: x["memory_stats"] for d, x in t["at_oom"]["by_device"].items()}} or {"by_device": {}}]:
    for d, x in sp["by_device"].items():
        p = peak.setdefault(d, [0, 0])
        p[0] = max(p[0], x["reserved_bytes.all.peak"])
        p[1] = max(p[1], x["allocated_bytes.all.peak"])
used = sorted(str(d) for d in t["devices_used"])
info = sorted(str(u["device"]) for u in load("info.json")["used_devices"])
ver = per_device(load("verify.json"))
wi = per_device(load("whatif.json"))
out = ["info %s" % ("the devices used" if info == used else "DIFFERS: %s, used %s" % (info, used))]
out.append("verify " + ", ".join("%s %s" % (d, "identical" if v["identical"] else "DIVERGES")
                                  for d, v in sorted(ver.items())))
for d in used:
    rec = [s for s in wi[d]["settings"] if s["recorded"]][0]
    got = (rec["peak_reserved_bytes"], rec["peak_allocated_bytes"])
    out.append("whatif %s %s" % (d, "PyTorch's peaks" if list(got) == peak[d] else "DIFFERS: %s vs %s" % (got, peak[d])))
    rows = list(csv.DictReader(open(os.path.join(tmp, "r%s.csv" % d))))
    got = (max(int(r["reserved_max"]) for r in rows), max(int(r["allocated_max"]) for r in rows))
    out.append("render %s %s" % (d, "PyTorch's peaks" if list(got) == peak[d] else "DIFFERS: %s vs %s" % (got, peak[d])))
rp = per_device(load("replay.json"))
for d in used:
    m = rp[d].get("outside_pytorch_measured")
    e = (t.get("end") or {}).get("by_device", {}).get(d)
    if m and e and t.get("exit") == 0 and not t.get("oom"):
        want = e["mem_get_info"]["total"] - e["mem_get_info"]["free"] - \
            e["memory_stats"]["reserved_bytes.all.current"]
        out.append("outside %s %s" % (d, "as the job read it at its end" if m["last_bytes"] == want
                                       else "DIFFERS: %d vs %d" % (m["last_bytes"], want)))
others = sorted({"0", "1"} - set(used))
out.append("render of an unused device: %s" % ("refused" if all(
    not os.path.exists(os.path.join(tmp, "r%s.csv" % d)) for d in others) else "DRAWN"))
print("%-26s %s" % (name, "; ".join(out)))
PY
done
# two ranks of one job: rank 0's device 0 against rank 1's device 1, peak against peak
"$MEMSNAP" -q diff --json $M/ddp_rank0.pickle.zst $M/ddp_rank1.zst >"$TMPDIR/diff.json"
python3 - "$TMPDIR/diff.json" $M/ddp_rank0.truth.json $M/ddp_rank1.truth.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
def peak(p):
    t = json.load(open(p))
    d = str(t["devices_used"][0])
    return d, max(sp["by_device"][d]["reserved_bytes.all.peak"] for sp in t["step_peaks"])
(da, pa), (db, pb) = peak(sys.argv[2]), peak(sys.argv[3])
got = j["peaks"]["peak_reserved_bytes"]
print("diff: a device %s, b device %s; peaks reserved %s" % (
      j["a_device"], j["b_device"],
      "PyTorch's" if (got["a"], got["b"]) == (pa, pb)
      else "DIFFER: %s vs %s %s" % (got, pa, pb)))
PY
# rank 1's OOM, against PyTorch's message and the job's own readings in its OOM handler
for f in $M/oom_rank1_rank1.pickle.zst $M/oom_rank1_rank1.zst; do
	"$MEMSNAP" -q explain --json "$f" >"$TMPDIR/x.json"
	python3 - "$TMPDIR/x.json" $M/oom_rank1_rank1.truth.json "${f##*/}" <<'PY'
import json, re, sys
o, t, name = json.load(open(sys.argv[1]))["oom"], json.load(open(sys.argv[2])), sys.argv[3]
msg = t["oom"]
def figure(pat):
    m = re.search(pat, msg)
    v, unit = float(m.group(1)), m.group(2)
    return v, unit
def shown(n, unit):
    return round(n / {"MiB": 2**20, "GiB": 2**30}[unit], 2)
checks = []
for key, pat in (("requested_bytes", r"Tried to allocate ([\d.]+) (MiB|GiB)"),
                 ("allocated_bytes", r"memory ([\d.]+) (MiB|GiB) is allocated by PyTorch"),
                 ("free_in_reserved_bytes", r"and ([\d.]+) (MiB|GiB) is reserved by PyTorch but unallocated")):
    v, unit = figure(pat)
    checks.append("%s %s" % (key, "as PyTorch said" if shown(o[key], unit) == v else "DIFFERS: %s vs %s %s" % (o[key], v, unit)))
lim = t["limit_bytes"]
rng = o["capacity_inferred"]
if rng:
    checks.append("limit inferred %s" % ("around the one set" if rng["low_bytes"] <= lim <= rng["high_bytes"] else "MISSES %d: %s" % (lim, rng)))
else:
    checks.append("limit %s" % ("the one set" if o["capacity_bytes"] == lim else "DIFFERS: %s vs %d" % (o["capacity_bytes"], lim)))
a = t["at_oom"]["by_device"]["1"]
outside = a["mem_get_info"]["total"] - a["mem_get_info"]["free"] - a["memory_stats"]["reserved_bytes.all.current"]
got = o["outside_pytorch_bytes"]
checks.append("outside PyTorch %s" % ("not measured" if got is None else "as the job read it" if got == outside else "DIFFERS: %d vs %d" % (got, outside)))
checks.append("cause %s" % o["cause"])
print("%s: %s" % (name, "; ".join(checks)))
PY
done
