#!/usr/bin/env python3
"""Where CUDA's driver puts device memory, against where it put a PyTorch job's segments.

  probe_cuda_va.py make SEQS.json SNAPSHOT...   (anywhere) each snapshot's segment_allocs and
      segment_frees, in order, as a sequence of cudaMalloc/cudaFree with the recorded addresses
  probe_cuda_va.py run SEQS.json OUT.json       (on a GPU) each sequence replayed in a fresh
      process with nothing else on the GPU (no PyTorch, no kernels): the address each cudaMalloc
      returned
  probe_cuda_va.py compare SEQS.json OUT.json   how often a segment landed in the same place
      relative to the segments live then (below all, above all, between the same two) in the
      fresh process as in the recorded job

The snapshots are the project's own recordings (testdata/), read with pickle.
SEQS.json: {"NAME": {"ops": [["a", ID, BYTES] | ["f", ID], ...], "recorded": {"ID": ADDRESS}}}
OUT.json: {"NAME": {"ID": ADDRESS} | {"error": "..."}, "device": "NAME, DRIVER"}
"""
import bisect
import ctypes
import glob
import json
import os
import pickle
import subprocess
import sys


def make(out, paths):
    seqs = {}
    for path in paths:
        raw = subprocess.run(["zstd", "-qdc", path], capture_output=True, check=True).stdout \
            if path.endswith(".zst") else open(path, "rb").read()
        snap = pickle.loads(raw)  # the project's own recordings
        if not isinstance(snap, dict) or len(snap.get("device_traces", [])) != 1:
            continue
        trace = snap["device_traces"][0]
        if any(e["action"] == "segment_map" for e in trace):
            continue  # expandable segments: address ranges reserved once
        ops, live, recorded = [], {}, {}
        for e in trace:
            if e["action"] == "segment_alloc":
                i = len(recorded)
                live[e["addr"]] = i
                recorded[str(i)] = e["addr"]
                ops.append(["a", i, e["size"]])
            elif e["action"] == "segment_free" and e["addr"] in live:
                ops.append(["f", live.pop(e["addr"])])
        if len(recorded) >= 3:
            seqs[path] = {"ops": ops, "recorded": recorded}
    with open(out, "w") as f:
        json.dump(seqs, f)


def cudart():
    names = ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    for d in sys.path:
        names += sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib", "libcudart.so*")))
    names += sorted(glob.glob("/usr/local/cuda*/lib64/libcudart.so*"))
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            continue
    sys.exit("probe_cuda_va: no libcudart")


def run_one(ops):
    rt, ptr, live, addrs = cudart(), ctypes.c_void_p(), {}, {}
    for op in ops:
        if op[0] == "a":
            rc = rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(op[2]))
            if rc:
                return {"error": "cudaMalloc(%d) returned %d at id %s" % (op[2], rc, op[1])}
            live[op[1]] = addrs[str(op[1])] = ptr.value
        elif op[1] in live:
            rt.cudaFree(ctypes.c_void_p(live.pop(op[1])))
    return addrs


def run(seqs_path, out_path):
    out = {}
    for name, s in json.load(open(seqs_path)).items():
        tmp = out_path + ".ops.json"
        with open(tmp, "w") as f:
            json.dump(s["ops"], f)
        p = subprocess.run([sys.executable, __file__, "one", tmp], capture_output=True, text=True)
        out[name] = json.loads(p.stdout) if p.returncode == 0 else {"error": p.stderr[-300:]}
        os.unlink(tmp)
    q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                       capture_output=True, text=True)
    out["device"] = q.stdout.strip()
    with open(out_path, "w") as f:
        json.dump(out, f)


def top_down(ops):
    """The model's rule where it has no recorded address: below every segment so far."""
    low, addrs = 1 << 56, {}
    for op in ops:
        if op[0] == "a":
            low -= op[2] + (2 << 20)
            addrs[str(op[1])] = low
    return addrs


def same_place(s, got):
    """Segments placed, relative to those live then, as the recorded job placed them."""
    live, n, k = {}, 0, 0
    for op in s["ops"]:
        if op[0] == "f":
            live.pop(op[1], None)
            continue
        rec, new = s["recorded"][str(op[1])], got[str(op[1])]
        if live:
            r = sorted(a for a, _ in live.values())
            g = sorted(b for _, b in live.values())
            n += 1
            k += bisect.bisect(r, rec) == bisect.bisect(g, new)
        live[op[1]] = (rec, new)
    return k, n


def compare(seqs_path, out_path):
    seqs, probed = json.load(open(seqs_path)), json.load(open(out_path))
    total = [0, 0, 0]
    print("driver:", probed["device"])
    print("recording: same place in a fresh process / by the model's rule, of segments made "
          "while others were live")
    for name, s in seqs.items():
        p = probed.get(name, {})
        if "error" in p or not p:
            print("%s: %s" % (name, p.get("error", "not run")))
            continue
        (k, n), (t, _) = same_place(s, p), same_place(s, top_down(s["ops"]))
        print("%s: %d / %d of %d" % (name, k, t, n))
        total = [total[0] + k, total[1] + t, total[2] + n]
    print("all: %d / %d of %d" % tuple(total))


if __name__ == "__main__":
    cmd, args = sys.argv[1] if len(sys.argv) > 1 else "", sys.argv[2:]
    if cmd == "make" and len(args) >= 2:
        make(args[0], args[1:])
    elif cmd == "run" and len(args) == 2:
        run(*args)
    elif cmd == "one" and len(args) == 1:
        json.dump(run_one(json.load(open(args[0]))), sys.stdout)
    elif cmd == "compare" and len(args) == 2:
        compare(*args)
    else:
        sys.exit(__doc__)
