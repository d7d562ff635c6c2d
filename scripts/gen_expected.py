#!/usr/bin/env python3
"""Values computed from PyTorch snapshots with Python's own pickle module, independently of
memsnap, for the tests to compare against (testdata/snapshots/expected.json).

Only run on snapshots you trust: pickle.load executes code named in the file.
Usage: scripts/gen_expected.py SNAPSHOT_DIR > testdata/snapshots/expected.json
"""
import collections, glob, gzip, json, os, pickle, sys


def load(path):
    if path.endswith(".gz"):
        return pickle.load(gzip.open(path, "rb"))
    return pickle.load(open(path, "rb"))


def summarize(d):
    out = {}
    traces = d["device_traces"]
    out["entries"] = sum(len(t) for t in traces)
    acts = collections.Counter(e["action"] for t in traces for e in t)
    out["by_action"] = dict(sorted(acts.items()))
    out["size_sum_by_action"] = {a: sum(e["size"] for t in traces for e in t if e["action"] == a)
                                 for a in sorted(acts)}
    out["streams"] = sorted({e["stream"] for t in traces for e in t})
    out["entries_with_frames"] = sum(1 for t in traces for e in t if e.get("frames"))
    out["distinct_stacks"] = len({tuple((f["name"], f["filename"], f["line"]) for f in e["frames"])
                                  for t in traces for e in t if e.get("frames")})
    t0 = traces[0]
    out["first"] = {k: t0[0].get(k) for k in ("action", "addr", "size", "stream", "time_us")}
    out["last"] = {k: t0[-1].get(k) for k in ("action", "addr", "size", "stream", "time_us")}
    cur = peak = 0
    peak_i = -1
    for i, e in enumerate(t0):
        if e["action"] == "alloc":
            cur += e["size"]
        elif e["action"] == "free_completed":
            cur -= e["size"]
        if cur > peak:
            peak, peak_i = cur, i
    out["peak_requested"] = peak
    out["peak_requested_index"] = peak_i
    segs = d["segments"]
    out["segments"] = len(segs)
    out["blocks"] = sum(len(s["blocks"]) for s in segs)
    out["reserved"] = sum(s["total_size"] for s in segs)
    blocks = [b for s in segs for b in s["blocks"]]
    out["allocated"] = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    out["internal_free"] = sum(b["size"] - b["requested_size"] for b in blocks
                               if b["state"] == "active_allocated")
    out["external_free"] = sum(b["size"] for b in blocks if b["state"] == "inactive")
    out["largest_free"] = max([b["size"] for b in blocks if b["state"] == "inactive"] or [0])
    out["annotations"] = len(d.get("external_annotations", []))
    out["alloc_conf"] = d["allocator_settings"]["PYTORCH_CUDA_ALLOC_CONF"]
    return out


res = {}
for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.pickle*"))):
    res[os.path.basename(p).split(".")[0]] = summarize(load(p))
json.dump(res, sys.stdout, indent=1, sort_keys=True)
print()
