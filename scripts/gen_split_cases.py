#!/usr/bin/env python3
"""Writes the inputs that test reading a snapshot with two readers (run once; outputs are
committed). Built from dynamic_oom's first trace entries, protocol 4 as PyTorch writes it:
- testdata/snapshots/edge/split_back_refs.pickle: each entry has an extra key whose value is
  one of 30 string objects, each first used somewhere in the middle and used again later (memo
  gets of slots the second reader put); the annotations at the end use them again (gets that
  reach back into the second reader's part from after it).
- testdata/snapshots/edge/split_two_devices.pickle: the entries in two device lists, so that the
  second reader starts in device 1's.
- testdata/snapshots/edge/split_entry_twice.pickle: one entry dict object twice in its list (a
  memo get of a streamed entry): refused, the same way by one reader or two.
- testdata/snapshots/edge/split_consumed_frame.pickle: an entry the fast path leaves to the
  general path (a float value), whose dict a later entry's frames list holds: refused ("reference
  to a streamed trace entry"), the same way by one reader or two (the second reader finds it at
  the merge).
Usage: scripts/gen_split_cases.py SHARED_TESTDATA_DIR
"""
import copy, os, pickle, sys

src = os.path.join(sys.argv[1], "dynamic_oom.pickle")
d = pickle.load(open(src, "rb"))  # a trusted file recorded by this project
entries = copy.deepcopy(d["device_traces"][0][:3000])
out = "testdata/snapshots/edge"


def snapshot(traces, annotations):
    return {
        "segments": d["segments"][:4],
        "device_traces": traces,
        "allocator_settings": d["allocator_settings"],
        "external_annotations": annotations,
    }


# fresh str objects (not interned), each used from entry 1000 + 60 k on
tags = ["".join(["tag", str(k)]) for k in range(30)]
back = copy.deepcopy(entries)
for i, e in enumerate(back):
    k = (i - 1000) // 60
    if 0 <= k < len(tags):
        e["x"] = tags[k]
    if i > 1000 and i % 7 == 0:
        e["x"] = tags[(i * 13) % len(tags)]
anns = [{"name": t, "stage": "START", "device": 0, "time_us": 0} for t in tags]
with open(f"{out}/split_back_refs.pickle", "wb") as f:
    pickle.dump(snapshot([back], anns), f, protocol=4)

with open(f"{out}/split_two_devices.pickle", "wb") as f:
    pickle.dump(snapshot([entries[:1200], entries[1200:]], []), f, protocol=4)

twice = list(entries)
twice[2400] = twice[2100]
with open(f"{out}/split_entry_twice.pickle", "wb") as f:
    pickle.dump(snapshot([twice], []), f, protocol=4)

odd = copy.deepcopy(entries)
odd[1000]["extra"] = 0.5
odd[2500]["frames"] = [odd[1000]]
with open(f"{out}/split_consumed_frame.pickle", "wb") as f:
    pickle.dump(snapshot([odd], []), f, protocol=4)
