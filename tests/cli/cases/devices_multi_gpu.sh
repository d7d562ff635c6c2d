# Jobs on two GPUs (testdata/snapshots/multi_gpu, recorded by scripts/record_multi_gpu.py): for
# each process, as PyTorch's snapshot and as memsnap's trace of the same run, the devices replayed
# are those the process used, and each device's peaks against PyTorch's over the whole run (the
# job reset the peak counters at each step's start: the highest of its steps' peaks, the difference
# in bytes where there is one); rank 0 of oom_rank1 was killed and has no truth.
M=testdata/snapshots/multi_gpu
for f in $M/*.zst; do
	b=${f##*/}
	tag=${b%.zst}
	tag=${tag%.pickle}
	"$MEMSNAP" -q replay --json "$f" >"$TMPDIR/r.json" 2>/dev/null
	python3 - "$M/$tag.truth.json" "$TMPDIR/r.json" "$b" <<'PY'
import json, sys
t, r, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
devs = {str(r["device"]): r} if "device" in r else dict(r["devices"])
ms_of = {}
for sp in t.get("step_peaks") or []:
    for d, x in sp.get("by_device", {}).items():
        for k, v in x.items():
            ms_of.setdefault(d, {})[k] = max(ms_of.get(d, {}).get(k, 0), v)
for d, x in ((t.get("at_oom") or {}).get("by_device") or {}).items():
    for k in ("allocated_bytes.all.peak", "reserved_bytes.all.peak"):
        v = (x.get("memory_stats") or {}).get(k)
        if v is not None:
            ms_of.setdefault(d, {})[k] = max(ms_of.get(d, {}).get(k, 0), v)
out = []
for d, x in sorted(devs.items()):
    ms = ms_of.get(d)
    if not ms:
        out.append("device %s: no truth" % d)
        continue
    dr = x["peak_reserved_bytes"] - ms["reserved_bytes.all.peak"]
    da = x["peak_allocated_bytes"] - ms["allocated_bytes.all.peak"]
    out.append("device %s: reserved %s, allocated %s" % (d, "exact" if not dr else "%+d" % dr,
                                                         "exact" if not da else "%+d" % da))
used = sorted(str(d) for d in t.get("devices_used", []))
print("%-28s used %s, replayed %s | %s" % (name, ",".join(used), ",".join(sorted(devs)),
      "; ".join(out)))
PY
done
# one process over two devices: what each device holds of the model, against the tensors the job
# counted itself (PyTorch stamps the optimizer's steps on device 0 only)
for f in $M/pipeline.pickle.zst $M/pipeline.zst; do
	"$MEMSNAP" -q explain --json "$f" >"$TMPDIR/x.json"
	python3 - "$M/pipeline.truth.json" "$TMPDIR/x.json" "${f##*/}" <<'PY'
import json, sys
t, x, name = json.load(open(sys.argv[1]))["model"], json.load(open(sys.argv[2])), sys.argv[3]
for d, e in sorted(x["devices"].items()):
    s = e["state"]
    got = (s["parameter_bytes"], s["gradient_bytes"], s["optimizer_state_bytes"])
    want = (t["parameters_by_device"][d]["bytes"], t["gradients_by_device"][d]["bytes"],
            t["optimizer_state_by_device"][d]["bytes"])
    print("%s device %s: parameters, gradients, optimizer state %s" % (
          name, d, "as the job counted them" if got == want else "DIFFER: %s vs %s" % (got, want)))
PY
done
# DDP and FSDP2 ranks with stacks: the model per rank against the tensors the job counted
# (FSDP2's parameters are their rank's shards, made again by fully_shard; its gradients are views
# of reduce-scatter buffers, so explain does not tell them: null)
# memsnap's recordings of the same jobs have no stacks: FSDP2's gradients are not told there
# either, and what its steps keep from the start (the parameters and more) is counted as
# parameters, as the note says: an upper bound, never below the parameters
for f in $M/ddp_rank0.pickle.zst $M/ddp_rank1.pickle.zst $M/fsdp2_rank0.pickle.zst \
	$M/fsdp2_rank1.pickle.zst $M/ddp_rank1.zst $M/fsdp2_rank1.zst; do
	b=${f##*/}
	tag=${b%.zst}
	tag=${tag%.pickle}
	"$MEMSNAP" -q explain --json "$f" >"$TMPDIR/x.json"
	python3 - "$M/$tag.truth.json" "$TMPDIR/x.json" "$b" <<'PY'
import json, sys
t, x, name = json.load(open(sys.argv[1]))["model"], json.load(open(sys.argv[2])), sys.argv[3]
d = str(x["device"])
s = x["state"]
note = x["categories_note"] or ""
for key, truth in (("parameter_bytes", "parameters_by_device"), ("gradient_bytes", "gradients_by_device"),
                   ("optimizer_state_bytes", "optimizer_state_by_device")):
    want = t[truth][d]["bytes"]
    got = s[key]
    if got == want:
        said = "as the job counted"
    elif got is None:
        said = "not told (the job: %d)" % want
    elif key == "parameter_bytes" and got > want and "counted as parameters" in note:
        said = "at most, as the note says: %d over the job's %d" % (got - want, want)
    else:
        said = "DIFFERS: %s vs %d" % (got, want)
    print("%s %s: %s" % (name, key, said))
PY
done
