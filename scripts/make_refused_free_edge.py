#!/usr/bin/env python3
"""Writes two edge cases from the real recording
testdata/snapshots/pools/graph_capture_begin_empty_cache.zst (memsnap convert'ed to JSON, the
first argument), whose empty_cache() during a capture had its cudaFree refused by the driver:
  DIR/refused_free_flushed.json: an 8-byte allocation and its free added right after that
    segment_free, so that the replay must tell the refusal from the missing cudaFree (the
    recorder's interposer saw none) before the same segment is freed again;
  DIR/refused_free_snapshot.json: the recording as a snapshot has it, without the interposer's
    events and the recorder's marks, where only the second free of the same segment tells.
Stack frames are dropped.
usage: make_refused_free_edge.py CONVERTED.json DIR"""
import json
import sys

d = json.load(open(sys.argv[1]))
trace = d["device_traces"][0]
for e in trace:
    e.pop("frames", None)
for s in d["segments"]:
    s.pop("frames", None)
    for b in s.get("blocks", []):
        b.pop("frames", None)
refused = next(i for i, e in enumerate(trace) if e["action"] == "segment_free")
small = next(e for e in trace if e["action"] == "alloc" and e["size"] == 8)
t = trace[refused]["time_us"]
extra = [dict(small, addr=small["addr"] + 1024, time_us=t + 1, action=a)
         for a in ("alloc", "free_requested", "free_completed")]
with open(sys.argv[2] + "/refused_free_snapshot.json", "w") as f:
    json.dump(dict(d, device_traces=[[e for e in trace if not e.get("source", 0)]],
                   external_annotations=[]), f, separators=(",", ":"))
trace[refused + 1:refused + 1] = extra
with open(sys.argv[2] + "/refused_free_flushed.json", "w") as f:
    json.dump(d, f, separators=(",", ":"))
