#!/usr/bin/env python3
"""Writes snapshots whose events are on a device other than 0, from the bundled real ones (run
once; outputs are committed). A rank's snapshot has its events in device_traces[rank] and its
segments tagged with the rank's device; these files are real snapshots moved there, nothing else
changed, so each device's truth is its source's truth file:
- testdata/snapshots/devices/rank1_dynamic_oom.pickle.zst: dynamic_oom as rank 1 of a job
  (device_traces = [[], dynamic_oom's entries]; its segments on device 1). It ran under a memory
  fraction and hit an OOM: the OOM is on device 1. Its annotations (the optimizer's steps) are on
  device 1 too, as a rank's current device would have them.
- testdata/snapshots/devices/two_devices.pickle.zst: one process on two devices: device 0 holds
  multistream, device 1 dynamic_oom (each its own entries and segments; allocator settings are
  per process and both sources ran with the defaults).
Usage: scripts/gen_device_cases.py   (from the project's root; needs zstd)
"""
import os, pickle, subprocess


def load(path):
    raw = open(path, "rb").read()
    if path.endswith(".zst"):
        raw = subprocess.run(["zstd", "-dc", path], capture_output=True, check=True).stdout
    return pickle.loads(raw)  # trusted files recorded by this project


def on_device(snap, dev):
    """The segments and the annotations (record_function's, made on the current device) moved."""
    for s in snap["segments"]:
        s["device"] = dev
    for a in snap.get("external_annotations", []):
        a["device"] = dev
    return snap


def write(name, snap):
    out = os.path.join("testdata/snapshots/devices", name)
    raw = pickle.dumps(snap, protocol=4)
    subprocess.run(["zstd", "-q", "-19", "-f", "-o", out], input=raw, check=True)
    print(out, len(raw), "bytes before compression")


os.makedirs("testdata/snapshots/devices", exist_ok=True)
oom = load("testdata/snapshots/dynamic_oom.pickle")
ms = load("testdata/snapshots/multistream.pickle.zst")
assert oom["allocator_settings"] == ms["allocator_settings"]

rank1 = dict(oom)
rank1["device_traces"] = [[], oom["device_traces"][0]]
write("rank1_dynamic_oom.pickle.zst", on_device(rank1, 1))

oom = on_device(load("testdata/snapshots/dynamic_oom.pickle"), 1)
two = dict(ms)
two["segments"] = ms["segments"] + oom["segments"]
two["device_traces"] = [ms["device_traces"][0], oom["device_traces"][0]]
two["external_annotations"] = ms.get("external_annotations", []) + oom.get(
    "external_annotations", [])
write("two_devices.pickle.zst", two)
