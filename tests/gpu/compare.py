"""Compare memsnap's recorded PyTorch events with PyTorch's own _record_memory_history.

    python compare.py MEMSNAP_TRACE.json TORCH_SNAPSHOT.pickle
Both lists of device 0's events (action, address, size, stream) must be equal; memsnap's raw
CUDA events (actions named cuda_..., which PyTorch's tools pass over) are counted and left out.
Exit 0 if equal, 1 with the first difference.
"""
import json
import pickle
import sys

ours = json.load(open(sys.argv[1]))
theirs = pickle.load(open(sys.argv[2], "rb"))


def key(e):
    addr = e.get("device_free", e.get("addr")) if e["action"] == "oom" else e["addr"]
    return (e["action"], addr, e["size"], e.get("stream", 0))


def is_raw(e):
    return e["action"].startswith("cuda_")


mine = [e for e in ours["device_traces"][0] if not is_raw(e)]
raw = sum(1 for t in ours["device_traces"] for e in t if is_raw(e))
ref = theirs["device_traces"][0]
a = [key(e) for e in mine]
b = [key(e) for e in ref]
print(f"memsnap: {len(a)} allocator events (+{raw} raw CUDA); PyTorch history: {len(b)}")
for i, (x, y) in enumerate(zip(a, b)):
    if x != y:
        print(f"first difference at event {i}: memsnap {x}, PyTorch {y}")
        sys.exit(1)
if len(a) < len(b):
    print(f"memsnap has {len(a)} events, PyTorch {len(b)}")
    sys.exit(1)
# PyTorch's history ends at the dump; memsnap goes on recording until the program exits,
# where Python frees the model, its gradients and the optimizer state
# marks, not allocations: the dump's own SNAPSHOT entry, which its trace omits, and the
# recorder's marks of what each device had free (a snapshot action each)
tail = [k for k in a[len(b):] if k[0] != "snapshot"]
if any(k[0] not in ("free_requested", "free_completed", "segment_free") for k in tail):
    print(f"after the dump memsnap has events other than the exit's frees: {tail[:5]}")
    sys.exit(1)
if tail:
    print(f"memsnap then has {len(tail)} more: the frees of the program's exit")
print("identical: every block-level event matches")
