"""A small transformer training loop for the recorder's GPU tests and benchmark.

    python train.py [--steps N] [--compare SNAPSHOT.pickle] [--torch-history none|python]
                    [--memsnap PATH [--stacks python]] [--report FILE.json]

--compare: also record with PyTorch's own _record_memory_history from the first allocation
and dump its snapshot at the end (the block-level events memsnap must equal).
--torch-history / --memsnap: the recorders whose overhead bench/record_overhead.sh measures.
--report: median step time (ms) and steps, as JSON.
--alternate memsnap|torch: one process, the recorder on and off in turns of --block steps
(memsnap: recording with Python stacks against not recording; torch: _record_memory_history
with Python stacks against none), and the report holds the median step of each and the
overhead; the machine's drift, larger than the effect between runs, moves both alike.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--warmup", type=int, default=5)
p.add_argument("--compare")
p.add_argument("--torch-history", choices=["none", "python"])
p.add_argument("--memsnap")
p.add_argument("--stacks", default=None)
p.add_argument("--report")
p.add_argument("--layers", type=int, default=6)
p.add_argument("--dim", type=int, default=512)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--seq", type=int, default=256)
p.add_argument("--alternate", choices=["memsnap", "torch"])
p.add_argument("--block", type=int, default=2)
a = p.parse_args()

torch.cuda.init()
if a.compare or a.torch_history:
    ctx = "all" if (a.compare or a.torch_history == "python") else None
    torch.cuda.memory._record_memory_history(enabled="all", context=ctx, stacks="python",
                                             max_entries=10_000_000)
if a.memsnap:
    import memsnap
    memsnap.record(a.memsnap, stacks=a.stacks)


def recording(on):
    """--alternate: the recorder on or off for the next steps (outside their timing)."""
    if a.alternate == "memsnap":
        import memsnap
        # the PyTorch hook records into the process's global recorder: none, no events
        memsnap._lib.msr_set_global(memsnap._rec if on else None)
    elif on:
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                 max_entries=1_000_000)
    else:
        torch.cuda.memory._record_memory_history(enabled=None)


if a.alternate == "memsnap" and not a.memsnap:
    p.error("--alternate memsnap needs --memsnap PATH --stacks python")

try:
    import memsnap as _ms
    phase, step = _ms.phase, _ms.step
except ImportError:  # run without memsnap on the path
    import contextlib
    phase, step = (lambda name: contextlib.nullcontext()), (lambda n=None: None)

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(a.dim, 8, 4 * a.dim, batch_first=True, device="cuda")
model = nn.TransformerEncoder(layer, a.layers, enable_nested_tensor=False).cuda()
head = nn.Linear(a.dim, 1000, device="cuda")
opt = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-4)
x = torch.randn(a.batch, a.seq, a.dim, device="cuda")
y = torch.randint(0, 1000, (a.batch, a.seq), device="cuda")

times = []
on_off = {True: [], False: []}
for i in range(a.warmup + a.steps):
    torch.cuda.synchronize()
    on = (i // a.block) % 2 == 1
    if a.alternate:
        recording(on)
    t0 = time.perf_counter()
    step(i)
    with phase("forward"):
        out = head(model(x))
        loss = nn.functional.cross_entropy(out.view(-1, 1000), y.view(-1))
    with phase("backward"):
        loss.backward()
    with phase("optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)
    del out, loss
    torch.cuda.synchronize()
    if i >= a.warmup:
        times.append((time.perf_counter() - t0) * 1e3)
        on_off[on].append(times[-1])

if a.compare:
    torch.cuda.memory._dump_snapshot(a.compare)
if a.report:
    with open(a.report, "w") as f:
        rep = {"median_ms": statistics.median(times), "steps": len(times), "min_ms": min(times)}
        if a.alternate:
            on_ms, off_ms = statistics.median(on_off[True]), statistics.median(on_off[False])
            rep.update(alternate=a.alternate, block=a.block, on_median_ms=on_ms,
                       off_median_ms=off_ms, steps_on=len(on_off[True]),
                       steps_off=len(on_off[False]), overhead_pct=100 * (on_ms / off_ms - 1))
        json.dump(rep, f)
print(f"train.py: {len(times)} steps, median {statistics.median(times):.2f} ms")
