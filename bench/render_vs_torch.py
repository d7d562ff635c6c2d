#!/usr/bin/env python3
"""memsnap render against PyTorch's trace_plot, both in one run on one machine (bench/README.md).

For each snapshot in SNAPDIR, best of 3 wall times of
  - `memsnap render SNAP -o page.html` (the whole command: read, replay, write the page), and
  - pickle.load + torch.cuda._memory_viz.trace_plot + writing its page,
and the size of each page. PyTorch's page also needs its viewer, fetched from a CDN when opened
(not counted in its size). Usage: render_vs_torch.py MEMSNAP SNAPDIR OUTDIR"""
import os
import pickle
import subprocess
import sys
import time

memsnap, snapdir, outdir = sys.argv[1:4]
os.makedirs(outdir, exist_ok=True)
import torch  # noqa: E402
from torch.cuda import _memory_viz  # noqa: E402


def best(fn, n=3):
    t = 1e9
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


print(f"torch {torch.__version__}, python {sys.version.split()[0]}")
print("| snapshot | memsnap render | its page | trace_plot (load + plot + write) | its page | time ratio | size ratio |")
print("|---|---|---|---|---|---|---|")
for name in sorted(os.listdir(snapdir)):
    if not name.endswith(".pickle"):
        continue
    snap = os.path.join(snapdir, name)
    ours = os.path.join(outdir, name + ".memsnap.html")
    theirs = os.path.join(outdir, name + ".torch.html")

    def run_memsnap():
        subprocess.run([memsnap, "render", snap, "-o", ours], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def run_torch():
        with open(snap, "rb") as f:
            data = pickle.load(f)  # the benchmark's own test files
        with open(theirs, "w") as f:
            f.write(_memory_viz.trace_plot(data))

    tm, tt = best(run_memsnap), best(run_torch)
    sm, st = os.path.getsize(ours), os.path.getsize(theirs)
    print(f"| {name} | {tm:.3f} s | {sm / 1e6:.2f} MB | {tt:.3f} s | {st / 1e6:.2f} MB | "
          f"{tt / tm:.1f}x | {st / sm:.1f}x |")
