#!/usr/bin/env python3
"""Writes testdata/snapshots/edge/generation_one_chain.json: a small generation job in PyTorch's
snapshot layout (JSON form), made by this script, not by PyTorch. Weights are made outside any
module call; then N forwards (each under Module._call_impl), each with a temporary and a KV cache
of one concatenation chain: the forward's cache tensor, one token (4096 bytes) larger than the
last, is made before the last one is freed (torch.cat's result, then its source let go). Between
forwards, a sampling step outside any module. One request of N forwards, one chain; the cache
grows 4096 bytes a token.

usage: python3 scripts/gen_generation_edge.py [N] [OUT]
"""
import json
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
out = sys.argv[2] if len(sys.argv) > 2 else "testdata/snapshots/edge/generation_one_chain.json"
OUTSIDE = [{"filename": "/home/u/generate.py", "line": 10, "name": "main"}]
CALL = [{"filename": "/home/u/model.py", "line": 5, "name": "forward"},
        {"filename": "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py",
         "line": 1750, "name": "_call_impl"},
        {"filename": "/home/u/generate.py", "line": 12, "name": "main"}]
events, t = [], [1_000_000]


def entry(action, addr, size, frames):
    t[0] += 10
    events.append({"action": action, "addr": addr, "size": size, "stream": 0,
                   "time_us": t[0], "frames": frames})


def alloc(addr, size, frames):
    entry("alloc", addr, size, frames)


def free(addr, size, frames):
    entry("free_requested", addr, size, frames)
    entry("free_completed", addr, size, frames)


W, S, A, K = 0x7f0000000000, 0x7f0000100000, 0x7f0000200000, 0x7f0000300000
alloc(W, 1 << 20, OUTSIDE)  # the weights
last = None
for i in range(n):
    alloc(S + i * 0x1000, 512, OUTSIDE)  # the token fed in (sampling, outside any module)
    alloc(A + i * 0x1000, 512, CALL)  # a temporary of the forward
    free(A + i * 0x1000, 512, CALL)
    alloc(K + i * 0x10000, 4096 * (i + 1), CALL)  # the cache, one token longer
    if last:
        free(*last, CALL)  # its source
    last = (K + i * 0x10000, 4096 * (i + 1))
    free(S + i * 0x1000, 512, OUTSIDE)
free(*last, CALL)  # the request ends
json.dump({"segments": [], "device_traces": [events]}, open(out, "w"), indent=0)
print("wrote", out, len(events), "entries")
