#!/usr/bin/env python3
"""Adds PyTorch main's `forward_frames` to a PyTorch 2.11 snapshot, for memsnap's tests.

    python3 scripts/add_forward_frames.py IN.pickle[.zst] OUT.pickle

PyTorch's main branch writes, next to `frames`, `forward_frames`: for an allocation made in
backward, the frames (a list of strings) where its tensor was made in forward. No release has
it yet, so memsnap is tested on a real 2.11 snapshot with the key added here: every allocation
without frames (made on the autograd engine's thread, in backward) made after an allocation with
frames (a forward's) gets, as its forward frames, the frames of the latest allocation of the same
size made with frames before it (the activation a gradient is the size of), else of the latest
allocation with frames; each frame written "filename:line:name" as memory_viz shows one. Which
forward frame is chosen is this script's rule, not PyTorch's: the file tests that the key is read,
kept and shown, not where PyTorch's autograd made each tensor. Reads the pickle without running
code in it (only dicts, lists, strings and numbers); writes protocol 4.
"""
import io
import pickle
import subprocess
import sys


class Refuse(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused: %s.%s" % (module, name))


def main():
    src, out = sys.argv[1], sys.argv[2]
    data = open(src, "rb").read()
    if src.endswith(".zst"):
        data = subprocess.run(["zstd", "-qdc", src], capture_output=True, check=True).stdout
    snap = Refuse(io.BytesIO(data)).load()
    added = 0
    for tr in snap["device_traces"]:
        last, by_size = None, {}
        for e in tr:
            if e["action"] != "alloc":
                continue
            if e.get("frames"):
                fr = ["%s:%d:%s" % (f["filename"], f["line"], f["name"]) for f in e["frames"]]
                last = by_size[e["size"]] = fr
            elif last is not None:
                e["forward_frames"] = list(by_size.get(e["size"], last))
                added += 1
    with open(out, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    print("forward_frames added to %d allocations" % added)


if __name__ == "__main__":
    main()
