"""The recorder's Python stack reader on this machine's CPython, with and without the GIL.

    python3 pystack_test.py MODULE_DIR MEMSNAP OUT_DIR
Records allocations from nested functions (in the main thread and in another thread), reads
the trace back with memsnap, and checks every frame's function, file and line against what
Python itself says. Exit 0 on success, 77 when this interpreter's frames cannot be read.
"""
import inspect
import json
import os
import subprocess
import sys
import threading

mod_dir, memsnap, out = sys.argv[1:4]
sys.path.insert(0, mod_dir)
import _pystack_test as m  # noqa: E402

if not m.supported():
    print(f"SKIP: Python {sys.version.split()[0]}: frame layout not supported")
    sys.exit(77)
path = os.path.join(out, "pystack.zst")
m.open(path)
expected = []  # per capture: [(name, line)] innermost first, down to this module's frame


def here():
    return inspect.currentframe().f_back.f_lineno


def h(release):
    line = here() + 1
    sid = m.capture(release)
    return sid, [("h", line)]


def g(release):
    line = here() + 1
    sid, fr = h(release)
    return sid, fr + [("g", line)]


def f(release):
    line = here() + 1
    sid, fr = g(release)
    return sid, fr + [("f", line)]


ids = []
for release in (False, True, True):
    line = here() + 1
    sid, fr = f(release)
    ids.append(sid)
    expected.append(fr + [("<module>", line)])
assert ids[0] != 0, "no stack captured"
assert ids[0] == ids[1] == ids[2], f"the same stack must intern once: {ids}"

box = []


def worker():
    line = here() + 1
    sid, fr = f(True)
    box.append((sid, fr + [("worker", line)]))


t = threading.Thread(target=worker)
t.start()
t.join()
expected.append(box[0][1])
m.close()

js = os.path.join(out, "pystack.json")
subprocess.run([memsnap, "convert", path, "-o", js], check=True)
ev = json.load(open(js))["device_traces"][0]
assert len(ev) == 4, f"{len(ev)} events"
me = os.path.abspath(__file__)
for i, (e, want) in enumerate(zip(ev, expected)):
    got = [(fr["name"], fr["line"]) for fr in e["frames"]]
    files = {os.path.abspath(fr["filename"]) for fr in e["frames"][:len(want)]}
    assert got[:len(want)] == want, f"event {i}: {got[:len(want)]} != {want}"
    assert files == {me}, f"event {i}: files {files}"
# the thread's stack goes on into threading.py (run, _bootstrap_inner, _bootstrap)
tail = [fr["name"].split(".")[-1] for fr in ev[3]["frames"][len(expected[3]):]]
assert "run" in tail and "_bootstrap" in tail, tail

# A second recording in the same process: frame ids are each recorder's own, so nothing the
# first one interned may leak into it (its address may well be the first one's again). The same
# lines are captured again, after other ones, so that a stale id would name a wrong frame.
path2 = os.path.join(out, "pystack2.zst")
m.open(path2)


def other(release):
    line = here() + 1
    sid = m.capture(release)
    return sid, [("other", line)]


again = []
for release in (False, True):
    line = here() + 1
    sid, fr = other(release)
    again.append(fr + [("<module>", line)])
    line = here() + 1
    sid, fr = f(release)
    again.append(fr + [("<module>", line)])
m.close()
js2 = os.path.join(out, "pystack2.json")
subprocess.run([memsnap, "convert", path2, "-o", js2], check=True)
ev2 = json.load(open(js2))["device_traces"][0]
assert len(ev2) == len(again), f"{len(ev2)} events in the second recording"
for i, (e, want) in enumerate(zip(ev2, again)):
    got = [(fr["name"], fr["line"]) for fr in e["frames"]]
    assert got == want, f"second recording, event {i}: {got} != {want}"
print(f"ok: Python {sys.version.split()[0]}, {len(ev)} stacks read with and without the GIL, "
      f"{len(ev2)} in a second recording")
