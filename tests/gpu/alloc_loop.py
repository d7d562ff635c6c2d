"""Allocator events and nothing else: allocate and free a small CUDA tensor N times.

    python alloc_loop.py [--n N] [--repeat R] [--torch-history none|python]
                         [--memsnap PATH [--stacks python]] [--report FILE.json]

Each iteration is 3 allocator events (alloc, free_requested, free_completed) and no GPU work,
so the difference in time per iteration between recorders, divided by 3, is their cost per
event on the allocating thread. Reports the best of R timed loops.
"""
import argparse
import json
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=200_000)
p.add_argument("--repeat", type=int, default=5)
p.add_argument("--torch-history", choices=["none", "python"])
p.add_argument("--memsnap")
p.add_argument("--stacks", default=None)
p.add_argument("--report")
a = p.parse_args()

torch.cuda.init()
if a.torch_history:
    torch.cuda.memory._record_memory_history(
        enabled="all", context="all" if a.torch_history == "python" else None,
        stacks="python", max_entries=10_000_000)
if a.memsnap:
    import memsnap
    memsnap.record(a.memsnap, stacks=a.stacks)


def loop(n):
    for _ in range(n):
        t = torch.empty(256, device="cuda")
        del t


loop(1000)
best = float("inf")
for _ in range(a.repeat):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    loop(a.n)
    best = min(best, time.perf_counter() - t0)
ns_iter = best * 1e9 / a.n
if a.report:
    with open(a.report, "w") as f:
        json.dump({"ns_per_iteration": ns_iter}, f)
print(f"alloc_loop.py: {ns_iter:.1f} ns per iteration (3 events)")
