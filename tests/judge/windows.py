#!/usr/bin/env python3
"""Windows of a replay judged by memory_viz's arithmetic, independently of memsnap's model.

For one-device PyTorch snapshots whose replay reproduces the recording (their segments are
PyTorch's own), the reserved and requested bytes at each event follow from the trace alone:
walking back from the end state (what its segments and active blocks hold) over every event
gives what was there before the first, then walking forward gives each event's figures. A
window [from, to) has the figures before event `from` at its start, and its peaks are the most
after any event inside it.

usage: windows.py MEMSNAP FILE...
Checks three windows a file against `MEMSNAP replay --json --from A --to B` (the model) and
`MEMSNAP stats --json --from A --to B` (the trace read alone), with the figures after their last
event, and one moment (--at E: the state after event E) of each; where the file has a
truth file beside it (FILE's stem + .truth.json: PyTorch's memory_stats, recorded), the window of
the whole trace's allocated and reserved peaks against PyTorch's. Exit 1 on any difference.
"""
import io
import json
import subprocess
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from snapshot_reader import Refuse, raw  # noqa: E402


def series(snap):
    """(reserved, requested) after each event of device 0's trace, and before the first."""
    segs = snap["segments"]
    tr = snap["device_traces"][0]
    res = sum(s["total_size"] for s in segs if s.get("device", 0) == 0)
    # the trace's sizes are the bytes asked for: PyTorch's requested_bytes (allocated_bytes
    # rounds them as the allocator's blocks are, which the trace does not say)
    alloc = sum(b.get("requested_size", b["size"]) for s in segs if s.get("device", 0) == 0
                for b in s["blocks"] if b["state"] in ("active_allocated", "active_pending_free"))
    # back from the end: undo every event
    for e in reversed(tr):
        a, n = e["action"], e["size"]
        if a in ("segment_alloc", "segment_map"):
            res -= n
        elif a in ("segment_free", "segment_unmap"):
            res += n
        elif a == "alloc":
            alloc -= n
        elif a == "free_completed":
            alloc += n
    start = (res, alloc)
    out = []
    for e in tr:
        a, n = e["action"], e["size"]
        if a in ("segment_alloc", "segment_map"):
            res += n
        elif a in ("segment_free", "segment_unmap"):
            res -= n
        elif a == "alloc":
            alloc += n
        elif a == "free_completed":
            alloc -= n
        out.append((res, alloc))
    return start, out


def expect(start, after, lo, hi):
    at = after[lo - 1] if lo else start
    end = after[hi - 1] if hi > lo else at
    pr, pa = at
    for r, a in after[lo:hi]:
        pr, pa = max(pr, r), max(pa, a)
    return {"reserved_bytes_at_start": at[0], "requested_bytes_at_start": at[1],
            "peak_reserved_bytes": pr, "peak_requested_bytes": pa,
            "reserved_bytes_at_end": end[0], "requested_bytes_at_end": end[1]}


def main():
    memsnap, files = sys.argv[1], sys.argv[2:]
    checked = bad = 0
    for f in files:
        snap = Refuse(io.BytesIO(raw(f))).load()
        traces = [t for t in snap.get("device_traces") or [] if t]
        if len(traces) != 1 or not snap["device_traces"][0]:
            print("%s: not a one-device snapshot of device 0" % f)
            return 1
        start, after = series(snap)
        n = len(after)
        for lo, hi in ((0, n // 3), (n // 4, n // 2), (n // 2, n)):
            out = subprocess.run([memsnap, "-q", "replay", "--json", "--from", str(lo),
                                  "--to", str(hi), f], capture_output=True, text=True)
            if out.returncode:
                print("%s: replay exit %d: %s" % (f, out.returncode, out.stderr.strip()))
                bad += 1
                continue
            w = json.loads(out.stdout)["windows"][0]
            want = expect(start, after, lo, hi)
            # stats reads the same window from the trace alone (no model)
            st = subprocess.run([memsnap, "-q", "stats", "--json", "--from", str(lo), "--to",
                                 str(hi), f], capture_output=True, text=True)
            sw = json.loads(st.stdout)["windows"][0] if not st.returncode else {}
            checked += 1
            sdiff = {k: (sw.get(k), v) for k, v in want.items() if sw.get(k) != v}
            if sdiff:
                bad += 1
                print("%s [%d, %d): stats, the arithmetic: %s" % (f, lo, hi, sdiff))
            checked += 1
            diff = {k: (w[k], v) for k, v in want.items() if w[k] != v}
            if diff or (w["from_event"], w["to_event"]) != (lo, hi):
                bad += 1
                print("%s [%d, %d): memsnap, the arithmetic: %s" % (f, lo, hi, diff))
        # a moment: the state after one event (--at), by event and by the allocation there
        for e in (n // 3, (2 * n) // 3):
            want = expect(start, after, e, e + 1)
            tr = snap["device_traces"][0]
            ats = [str(e)]
            if tr[e]["action"] == "alloc":
                k = sum(1 for x in tr[:e + 1] if x["action"] == "alloc" and x["addr"] == tr[e]["addr"])
                ats.append("alloc:%#x#%d" % (tr[e]["addr"], k))
            for at in ats:
                for cmd in ("replay", "stats"):
                    out = subprocess.run([memsnap, "-q", cmd, "--json", "--at", at, f],
                                         capture_output=True, text=True)
                    w = json.loads(out.stdout)["windows"][0] if not out.returncode else {}
                    checked += 1
                    got = {k: w.get(k) for k in ("reserved_bytes_at_end", "requested_bytes_at_end")}
                    if (w.get("from_event"), w.get("to_event")) != (e, e + 1) or any(
                            got[k] != want[k] for k in got):
                        bad += 1
                        print("%s %s --at %s: %s, the arithmetic after %d: %s" %
                              (f, cmd, at, got, e, want))
        # a window by time: from the first event at or past T after the first event's time
        ts = [e.get("time_us") for e in snap["device_traces"][0]]
        if all(ts):
            t0 = ts[0]
            lo_t, hi_t = (ts[n // 4] - t0) * 1000, (ts[n // 2] - t0) * 1000
            lo = next(i for i, t in enumerate(ts) if (t - t0) * 1000 >= lo_t)
            hi = next(i for i, t in enumerate(ts) if (t - t0) * 1000 >= hi_t)
            out = subprocess.run([memsnap, "-q", "replay", "--json", "--from", "%dns" % lo_t,
                                  "--to", "%dus" % (hi_t // 1000), f], capture_output=True,
                                 text=True)
            w = json.loads(out.stdout)["windows"][0] if not out.returncode else {}
            want = expect(start, after, lo, hi)
            checked += 1
            if (w.get("from_event"), w.get("to_event")) != (lo, hi) or any(
                    w[k] != v for k, v in want.items()):
                bad += 1
                print("%s [%dns, %dus): memsnap %s, the arithmetic [%d, %d) %s" %
                      (f, lo_t, hi_t // 1000, w, lo, hi, want))
        truth = f.split(".pickle")[0] + ".truth.json"
        if __import__("os").path.exists(truth):
            st = json.load(open(truth))["stats"]
            out = subprocess.run([memsnap, "-q", "replay", "--json", "--from", "0", "--to",
                                  str(n), f], capture_output=True, text=True)
            w = json.loads(out.stdout)["windows"][0] if not out.returncode else {}
            checked += 1
            for k, t in (("peak_allocated_bytes", "allocated_bytes.all.peak"),
                         ("peak_reserved_bytes", "reserved_bytes.all.peak"),
                         ("peak_requested_bytes", "requested_bytes.all.peak")):
                if t in st and w.get(k) != st[t]:
                    bad += 1
                    print("%s whole: %s %s, PyTorch's %s %d" % (f, k, w.get(k), t, st[t]))
    print("%d windows: %d differ" % (checked, bad))
    return 1 if bad or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
