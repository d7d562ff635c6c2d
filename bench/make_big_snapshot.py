#!/usr/bin/env python3
"""Makes a large snapshot pickle out of a real one, for the size benchmarks.

    bench/make_big_snapshot.py IN.pickle OUT.pickle [--bytes 1G]

The real snapshot's trace (its device with the most entries) is written COPIES times, enough to
reach about --bytes: copy i has every address moved up by i * 2^40 and every time by i times the
trace's span, and the end state holds every copy's segments, moved the same way. Frames are shared
between the copies, as PyTorch's pickler shares repeated objects, so the file has the density of a
real one: every entry is real, only addresses and times are moved. It is an input for reading
(info, stats, the import rate), not a trace a replay can match: PyTorch would have served the
copies from the first copy's cached segments, and `verify` says so. Needs memory for all entries
as Python objects (about 6 GB for a 1 GB file).
"""
import argparse
import os
import pickle
import sys

SHIFT = 1 << 40


def parse_bytes(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper().rstrip("B").rstrip("I")
    return int(float(s[:-1]) * units[s[-1]]) if s[-1] in units else int(s)


def moved_segment(seg, off):
    s = dict(seg)
    s["address"] = seg["address"] + off
    s["blocks"] = [dict(b, address=b["address"] + off) if "address" in b else dict(b)
                   for b in seg.get("blocks", [])]
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--bytes", default="1G")
    a = ap.parse_args()
    target = parse_bytes(a.bytes)
    with open(a.src, "rb") as f:
        snap = pickle.load(f)  # a snapshot the benchmark was given to read
    if not isinstance(snap, dict) or not snap.get("device_traces"):
        sys.exit(f"{a.src}: not a snapshot with a trace")
    dev = max(range(len(snap["device_traces"])), key=lambda d: len(snap["device_traces"][d]))
    trace = snap["device_traces"][dev]
    if not trace or "time_us" not in trace[0]:
        sys.exit(f"{a.src}: the trace has no entries with times")
    copies = max(1, -(-target // os.path.getsize(a.src)))
    span = trace[-1]["time_us"] - trace[0]["time_us"] + 1
    out = []
    for i in range(copies):
        off, dt = i * SHIFT, i * span
        for e in trace:
            m = dict(e)
            if "addr" in m:
                m["addr"] += off
            m["time_us"] += dt
            out.append(m)
    segs = [moved_segment(s, i * SHIFT) for i in range(copies) for s in snap.get("segments", [])
            if s.get("device", 0) == dev]
    big = dict(snap)
    big["segments"] = segs
    big["device_traces"] = [out if d == dev else [] for d in range(len(snap["device_traces"]))]
    tmp = a.dst + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(big, f, protocol=4)
    os.replace(tmp, a.dst)
    print(f"{a.dst}: {os.path.getsize(a.dst)} bytes, {copies} copies of {len(trace)} entries "
          f"(device {dev}) = {len(out)} entries, {len(segs)} segments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
