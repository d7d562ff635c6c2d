#!/usr/bin/env python3
"""Writes the pickle test inputs (run once; outputs are committed):
- testdata/snapshots/proto/small_p{2,3,4,5}.pickle and small.json: the first 300 trace entries
  and all segments of dynamic_oom, dumped with each protocol, and the same dict as JSON;
- testdata/bad/*.pickle: pickles that must be refused (they would run code under pickle.load)
  or are malformed. Creating them runs nothing: the payloads are built with pickle.dumps of
  objects whose __reduce__ only names a callable.
Usage: scripts/gen_pickle_cases.py SHARED_TESTDATA_DIR
"""
import io, json, os, pickle, sys

src = os.path.join(sys.argv[1], "dynamic_oom.pickle")
d = pickle.load(open(src, "rb"))  # a trusted file recorded by this project
small = {
    "segments": d["segments"],
    "device_traces": [d["device_traces"][0][:300]],
    "allocator_settings": d["allocator_settings"],
    "external_annotations": d["external_annotations"],
}
out = "testdata/snapshots/proto"
for p in (2, 3, 4, 5):
    with open(f"{out}/small_p{p}.pickle", "wb") as f:
        pickle.dump(small, f, protocol=p)
with open(f"{out}/small.json", "w") as f:
    json.dump(small, f)

bad = "testdata/bad"


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


with open(f"{bad}/reduce_os_system_p4.pickle", "wb") as f:
    f.write(pickle.dumps({"segments": [Evil()]}, protocol=4))
with open(f"{bad}/reduce_os_system_p2.pickle", "wb") as f:
    f.write(pickle.dumps(Evil(), protocol=2))
with open(f"{bad}/global_p0.pickle", "wb") as f:
    f.write(b"cos\nsystem\n(S'echo pwned'\ntR.")
# 200 memo puts a million indices apart: 1 KB that would grow the memo to 3.3 GB
with open(f"{bad}/memo_jump.pickle", "wb") as f:
    f.write(b"\x80\x04]" + b"".join(b"r" + (k << 20).to_bytes(4, "little") for k in range(1, 201)) + b"0N.")
