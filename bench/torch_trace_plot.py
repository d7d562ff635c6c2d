#!/usr/bin/env python3
"""PyTorch's side of the render benchmark (bench/README.md), run where PyTorch is installed.

For each snapshot in SNAPDIR: the time of pickle.load + torch.cuda._memory_viz.trace_plot (best
of 3) and the size of the page it writes; the pages go to OUTDIR with a copy of the viewer
(torch/utils/viz/MemoryViz.js) those pages load from a CDN, so that they can be opened offline.
Usage: torch_trace_plot.py SNAPDIR OUTDIR"""
import os
import pickle
import shutil
import sys
import time

import torch
from torch.cuda import _memory_viz

snapdir, outdir = sys.argv[1], sys.argv[2]
os.makedirs(outdir, exist_ok=True)
print(f"torch {torch.__version__}, python {sys.version.split()[0]}")
print("snapshot\tload_s\ttrace_plot_s\thtml_bytes")
for name in sorted(os.listdir(snapdir)):
    if not name.endswith(".pickle"):
        continue
    best_load = best_plot = 1e9
    for _ in range(3):
        t0 = time.perf_counter()
        with open(os.path.join(snapdir, name), "rb") as f:
            data = pickle.load(f)  # the benchmark's own test files
        t1 = time.perf_counter()
        html = _memory_viz.trace_plot(data)
        t2 = time.perf_counter()
        best_load, best_plot = min(best_load, t1 - t0), min(best_plot, t2 - t1)
    out = os.path.join(outdir, name.replace(".pickle", ".torch.html"))
    with open(out, "w") as f:
        f.write(html)
    print(f"{name}\t{best_load:.3f}\t{best_plot:.3f}\t{os.path.getsize(out)}")
viz = os.path.join(os.path.dirname(torch.__file__), "utils", "viz", "MemoryViz.js")
if os.path.exists(viz):
    shutil.copy(viz, outdir)
