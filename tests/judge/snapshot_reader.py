#!/usr/bin/env python3
"""An independent reader of PyTorch's memory snapshots, to judge memsnap's stats against.

Not memsnap's code: a restricted unpickler whose find_class refuses everything (a snapshot is
plain dicts, lists, strings and numbers), then memory_viz's arithmetic on those dicts:
- the end: each device's requested bytes over its end state's active blocks (allocated, or
  freed and waiting for their streams, as memory_viz's active memory counts them);
- the peak: the trace's allocations until their free_completed, on top of what was live before
  its first event (the end state's active blocks the trace never allocates, and what it frees
  before allocating).

usage: snapshot_reader.py MEMSNAP FILE...
Prints each disagreement with `MEMSNAP stats --json FILE`, then how many devices agree. Files
it cannot read as a snapshot are skipped (memsnap's tests of bad input hold those). Exit 1 if
any device disagrees or stats fails on a file the reader takes.
"""
import gzip
import io
import json
import pickle
import subprocess
import sys


class Refuse(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused: %s.%s" % (module, name))


def raw(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".zst"):
        data = subprocess.run(["zstd", "-qdc", path], capture_output=True, check=True).stdout
    elif path.endswith(".gz"):
        data = gzip.decompress(data)
    return data


def end_requested(segs):
    want = {}
    for s in segs:
        want.setdefault(s["device"], 0)
        want[s["device"]] += sum(b.get("requested_size", b["size"]) for b in s["blocks"]
                                 if b["state"] in ("active_allocated", "active_pending_free"))
    return want


def peak_requested(segs, d, tr):
    allocd = {e["addr"] for e in tr if e["action"] == "alloc"}
    init = 0
    for s in segs:
        if s.get("device", 0) != d:
            continue
        a = s["address"]
        for b in s["blocks"]:
            if b["state"].startswith("active") and b.get("address", a) not in allocd:
                init += b.get("requested_size", b["size"])
            a += b["size"]
    seen = set()
    for e in tr:
        if e["action"] == "alloc":
            seen.add(e["addr"])
        elif e["action"] == "free_completed" and e["addr"] not in seen:
            init += e["size"]
            seen.add(e["addr"])
    cur = peak = init
    live = {}
    for e in tr:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
            cur += e["size"]
            peak = max(peak, cur)
        elif e["action"] == "free_completed":
            cur -= live.pop(e["addr"], e["size"])
    return peak


def main():
    memsnap, files = sys.argv[1], sys.argv[2:]
    checked = agree = pchecked = pagree = bad = 0
    for f in files:
        try:
            snap = Refuse(io.BytesIO(raw(f))).load()
        except Exception:
            continue
        segs = snap if isinstance(snap, list) else snap.get("segments", [])
        want = end_requested(segs)
        if not want:
            continue
        peaks = {}
        if isinstance(snap, dict):
            for d, tr in enumerate(snap.get("device_traces") or []):
                if any(e["action"] == "alloc" for e in tr):
                    peaks[d] = peak_requested(segs, d, tr)
        out = subprocess.run([memsnap, "-q", "stats", "--json", f], capture_output=True,
                             text=True)
        if out.returncode:
            print("%s: stats exit %d: %s" % (f, out.returncode, out.stderr.strip()))
            bad += 1
            continue
        j = json.loads(out.stdout)
        rows = [r for r in (j if isinstance(j, list) else [j]) if r.get("device") is not None]
        got = {r["device"]: r["end_requested_bytes"] for r in rows}
        gotp = {r["device"]: r["peak_requested_bytes"] for r in rows}
        for d, w in sorted(want.items()):
            checked += 1
            if got.get(d) == w:
                agree += 1
            else:
                print("%s device %d: stats %s, the end state %d" % (f, d, got.get(d), w))
        for d, p in sorted(peaks.items()):
            pchecked += 1
            if gotp.get(d) == p:
                pagree += 1
            else:
                print("%s device %d: peak: stats %s, the reader %d" % (f, d, gotp.get(d), p))
    print("%d devices of snapshots with an end state: %d agree at the end" % (checked, agree))
    print("%d device traces: %d agree at the peak" % (pchecked, pagree))
    return 1 if bad or agree != checked or pagree != pchecked else 0


if __name__ == "__main__":
    sys.exit(main())
