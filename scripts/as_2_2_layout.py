#!/usr/bin/env python3
"""Rewrite a PyTorch 2.11 snapshot in the layout PyTorch 2.2 wrote, keeping its data.

Usage: as_2_2_layout.py IN.pickle[.zst] OUT.pickle

PyTorch 2.2 and older record no allocator_settings, no external_annotations, and no
compile_context or user_metadata on trace entries; the segments, blocks and the other entry
fields are as 2.11 writes them. A real recording made under expandable_segments:True, rewritten
so, is what a user of those releases has: a trace whose settings must be told from its events.
IN is one of this project's own recordings (pickle.load runs what a pickle says: never give it
a file from elsewhere). The output is deterministic (protocol 4).
"""
import pickle
import subprocess
import sys


def main():
    src, out = sys.argv[1], sys.argv[2]
    if src.endswith(".zst"):
        raw = subprocess.run(["zstd", "-dc", src], check=True, capture_output=True).stdout
    else:
        with open(src, "rb") as f:
            raw = f.read()
    snap = pickle.loads(raw)
    snap.pop("allocator_settings", None)
    snap.pop("external_annotations", None)
    for trace in snap["device_traces"]:
        for entry in trace:
            entry.pop("compile_context", None)
            entry.pop("user_metadata", None)
    with open(out, "wb") as f:
        pickle.dump(snap, f, protocol=4)


if __name__ == "__main__":
    main()
