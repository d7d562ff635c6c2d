"""The trace entries at which a snapshot's record_function scopes begin, read by Python from the
project's own recordings (not memsnap's reader): for each START annotation whose name is NAME
(or begins with NAME before a trailing '*'), in time order, the first entry of device 0 at or
after it. Prints them as a JSON list.
usage: python3 tests/cli/scope_first_events.py SNAPSHOT.pickle.zst NAME"""
import json
import pickle
import subprocess
import sys

path, name = sys.argv[1], sys.argv[2]
snap = pickle.loads(subprocess.run(["zstd", "-qdc", path], check=True,
                                   capture_output=True).stdout)
times = [x["time_us"] for x in snap["device_traces"][0]]
match = (lambda n: n.startswith(name[:-1])) if name.endswith("*") else (lambda n: n == name)
starts = sorted(a["time_us"] for a in snap["external_annotations"]
                if a["stage"] == "START" and match(a["name"]))
print(json.dumps([next(i for i, u in enumerate(times) if u >= s) for s in starts]))
