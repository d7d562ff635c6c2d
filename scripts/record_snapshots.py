#!/usr/bin/env python3
"""Records real PyTorch CUDA memory snapshots, each with the truth PyTorch itself reports.

    python3 scripts/record_snapshots.py CASE... --out DIR      # CASE "all" for every case
    python3 scripts/record_snapshots.py --list

Needs a CUDA GPU and PyTorch; some cases need transformers, timm, pytorch-lightning or CuPy.
Nothing is downloaded: every model is built from a config with random weights.

Each case runs in its own process (a crash or an OOM in one leaves the others alone) and writes
DIR/NAME.pickle (what torch.cuda.memory._dump_snapshot writes, or for bare_list a pickle of
torch.cuda.memory_snapshot()) and DIR/NAME.truth.json (torch.cuda.memory_stats and mem_get_info
as PyTorch reported them, the allocator settings in force, the OOM message, what was done before
history was turned on, and a summary of the pickle's content). DIR/env.json holds the versions and
the signatures of the snapshot functions; DIR/run_log.json how each case ended; DIR/NAME.log its
output. A case whose feature does not exist in the installed PyTorch exits 77 (skipped). With
--memsnap BIN each case also runs under `BIN record`, which writes DIR/NAME.zst from the same run.
"""
import argparse
import gc
import inspect
import json
import os
import pickle
import random
import socket
import subprocess
import sys
import time
import traceback

HERE = os.path.abspath(__file__)
GiB = 1 << 30
SKIP = 77

STAT_KEYS = [
    "reserved_bytes.all.peak", "reserved_bytes.all.current",
    "reserved_bytes.large_pool.peak", "reserved_bytes.small_pool.peak",
    "allocated_bytes.all.peak", "allocated_bytes.all.current",
    "requested_bytes.all.peak", "requested_bytes.all.current",
    "active_bytes.all.peak", "active_bytes.all.current",
    "inactive_split_bytes.all.current",
    "segment.all.peak", "segment.all.current", "segment.all.allocated", "segment.all.freed",
    "allocation.all.allocated", "allocation.all.freed", "allocation.all.current",
    "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
    "num_sync_all_streams",
]

CASES = {}


def case(name, what, env=None, outputs=None, timeout=180, fallback_env=None):
    def deco(fn):
        CASES[name] = dict(fn=fn, what=what, env=env or {}, outputs=outputs or [name],
                           timeout=timeout, fallback_env=fallback_env)
        return fn
    return deco


# ---------------------------------------------------------------------------------------------
# helpers run inside a case's process

def stats(d=0):
    import torch
    st = torch.cuda.memory_stats(d)
    return {k: st.get(k) for k in STAT_KEYS}


def mem_info(d=0):
    import torch
    free, total = torch.cuda.mem_get_info(d)
    return {"free": free, "total": total}


def moment():
    """Stats of every device and mem_get_info of device 0, now."""
    import torch
    torch.cuda.synchronize()
    return {"stats": stats(0), "mem_get_info": mem_info(0)}


def gpt(d=512, layers=4, vocab=8192, heads=8, ff=None):
    import torch.nn as nn

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(d, heads, ff or 4 * d, batch_first=True, norm_first=True,
                                           dropout=0.0)
                for _ in range(layers))
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, x):
            import torch.nn as nn
            h = self.emb(x)
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
            for b in self.blocks:
                h = b(h, src_mask=mask, is_causal=True)
            return self.head(h)

    return GPT().cuda()


def train_step(model, opt, b, s, vocab, amp=True, autocast_cache=True):
    import torch
    import torch.nn.functional as F
    x = torch.randint(0, vocab, (b, s), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp, cache_enabled=autocast_cache):
        logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, vocab), x.view(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.item()


def shapes(n, seed, bs=(2, 4, 8), ss=(64, 128, 192, 256, 384, 512)):
    r = random.Random(seed)
    return [(r.choice(bs), r.choice(ss)) for _ in range(n)]


def summarize(obj):
    """What the pickle holds: entries per device, actions, OOM index, frames."""
    out = {}
    segs = obj if isinstance(obj, list) else obj.get("segments", [])
    blocks = [b for s in segs for b in s.get("blocks", [])]
    out["segments"] = len(segs)
    out["segments_bytes"] = sum(s.get("total_size", 0) for s in segs)
    out["blocks"] = len(blocks)
    out["blocks_with_frames"] = sum(1 for b in blocks if b.get("frames"))
    out["block_states"] = {}
    for b in blocks:
        out["block_states"][b.get("state")] = out["block_states"].get(b.get("state"), 0) + 1
    if isinstance(obj, list):
        out["top_level"] = "list"
        return out
    out["top_level"] = "dict"
    out["keys"] = sorted(obj.keys())
    traces = obj.get("device_traces", [])
    out["trace_entries"] = [len(t) for t in traces]
    out["actions"] = []
    out["oom_entry_index"] = None
    nframes, cpp, py = 0, 0, 0
    for di, t in enumerate(traces):
        acts = {}
        for i, e in enumerate(t):
            a = e.get("action")
            acts[a] = acts.get(a, 0) + 1
            if a == "oom" and out["oom_entry_index"] is None and di == 0:
                out["oom_entry_index"] = i
            for f in e.get("frames") or ():
                nframes += 1
                if str(f.get("filename", "")).endswith(".py"):
                    py += 1
                else:
                    cpp += 1
        out["actions"].append(acts)
    out["first_actions"] = [e.get("action") for e in traces[0][:8]] if traces else []
    out["entry_frames"] = {"total": nframes, "python": py, "other (C++)": cpp}
    if traces and traces[0]:
        out["entry_time_us_first_last"] = [traces[0][0].get("time_us"), traces[0][-1].get("time_us")]
    return out


class Ctx:
    def __init__(self, name, out, what):
        import torch
        self.name, self.out = name, out
        self.t0 = time.time()
        self.history_kw = None
        props = torch.cuda.get_device_properties(0)
        self.truth = {
            "case": name,
            "what": what,
            "torch": torch.__version__,
            "cuda_runtime": torch.version.cuda,
            "python": sys.version.split()[0],
            "device_count": torch.cuda.device_count(),
            "device_name": torch.cuda.get_device_name(0),
            "total_memory": props.total_memory,
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
            "fraction": None,
            "limit_bytes": None,
            "history": None,
            "max_entries": None,
            "before_history": None,
            "steps": 0,
            "oom": None,
            "oom_entry_index": None,
        }

    def history(self, **kw):
        import torch
        torch.cuda.memory._record_memory_history(**kw)
        self.history_kw = dict(kw)
        self.truth["history"] = {k: v for k, v in kw.items()}
        self.truth["max_entries"] = kw.get("max_entries", "default (sys.maxsize)")
        self.truth["history"]["turned_on_after_steps"] = self.truth["steps"]

    def fraction(self, f):
        import torch
        torch.cuda.set_per_process_memory_fraction(f)
        total = torch.cuda.mem_get_info(0)[1]
        self.truth["fraction"] = f
        self.truth["limit_bytes"] = int(f * total)

    def oom(self, e):
        import torch
        self.truth["oom"] = str(e)
        self.truth["at_oom"] = {"stats": stats(0), "mem_get_info": mem_info(0),
                                "steps_completed": self.truth["steps"]}

    def finish(self, how="dump", stop_history=True):
        import torch
        gc.collect()
        torch.cuda.synchronize()
        path = os.path.join(self.out, self.name + ".pickle")
        if how == "dump":
            torch.cuda.memory._dump_snapshot(path)
            self.truth["written_by"] = "torch.cuda.memory._dump_snapshot(path)"
        elif how == "bare_list":
            with open(path, "wb") as f:
                pickle.dump(torch.cuda.memory_snapshot(), f)
            self.truth["written_by"] = "pickle.dump(torch.cuda.memory_snapshot(), f)"
        else:
            how(path)
        t = self.truth
        t["seconds"] = round(time.time() - self.t0, 3)
        t["stats_by_device"] = {str(d): stats(d) for d in range(torch.cuda.device_count())}
        t["stats"] = t["stats_by_device"]["0"]
        t["mem_get_info"] = mem_info(0)
        st = t["stats"]
        t["events_estimate_from_stats"] = {
            "value": st["allocation.all.allocated"] + 2 * st["allocation.all.freed"]
            + st["segment.all.allocated"] + st["segment.all.freed"] + st["num_ooms"],
            "formula": "allocation.all.allocated + 2*allocation.all.freed (free_requested and "
                       "free_completed) + segment.all.allocated + segment.all.freed + num_ooms",
        }
        if self.history_kw is not None and stop_history:
            torch.cuda.memory._record_memory_history(enabled=None)
        with open(path, "rb") as f:
            obj = pickle.load(f)
        t["pickle_bytes"] = os.path.getsize(path)
        t["content"] = summarize(obj)
        if isinstance(obj, dict):
            t["trace_entries"] = t["content"]["trace_entries"]
            t["oom_entry_index"] = t["content"]["oom_entry_index"]
        with open(os.path.join(self.out, self.name + ".truth.json"), "w") as f:
            json.dump(t, f, indent=1)
        c = t["content"]
        print("DONE", self.name, json.dumps({
            "pickle_bytes": t["pickle_bytes"], "trace_entries": c.get("trace_entries"),
            "segments": c["segments"], "reserved_peak": st["reserved_bytes.all.peak"],
            "allocated_peak": st["allocated_bytes.all.peak"], "oom": bool(t["oom"]),
            "oom_entry_index": t["oom_entry_index"], "seconds": t["seconds"]}), flush=True)


# ---------------------------------------------------------------------------------------------
# cases

def _gpt_train(cx, model, opt, shp, vocab, autocast_cache=True):
    for b, s in shp:
        train_step(model, opt, b, s, vocab, autocast_cache=autocast_cache)
        cx.truth["steps"] += 1


@case("ring_wrap", "small GPT-like training (4 TransformerEncoderLayer, AdamW, bf16 autocast, random "
      "batch and sequence lengths) recorded with max_entries=3000 from the start: the ring buffer "
      "wraps many times, the pickle holds only the last 3000 events; the whole-run peaks are in stats")
def c_ring_wrap(cx):
    import torch
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python", max_entries=3000)
    vocab = 8192
    m = gpt(d=384, layers=4, vocab=vocab, heads=6)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    _gpt_train(cx, m, opt, shapes(16, seed=2), vocab)
    cx.finish()


def _late(cx, empty_cache):
    import torch
    torch.manual_seed(0)
    vocab = 16000
    m = gpt(d=512, layers=4, vocab=vocab, heads=8)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    shp = shapes(10, seed=3, bs=(2, 4, 8), ss=(128, 256, 512, 768, 1024))
    _gpt_train(cx, m, opt, shp[:5], vocab)
    cx.truth["before_history"] = dict(moment(), steps=5, reset_peak_memory_stats_called=False,
                                      note="stats at the moment history was turned on; the trace "
                                           "starts here, the model, its optimizer state and the "
                                           "cached segments already exist")
    cx.history(enabled="all", context="all", stacks="python")
    if empty_cache:
        torch.cuda.empty_cache()
        cx.truth["after_empty_cache"] = dict(moment(), note="right after torch.cuda.empty_cache(), "
                                             "the first call after history was turned on")
    _gpt_train(cx, m, opt, shp[5:], vocab)
    cx.finish()


@case("late_history", "5 training steps with history off (no reset_peak_memory_stats), then "
      "_record_memory_history() and 5 more steps: the trace starts mid-run, blocks and segments "
      "made before it have no alloc events")
def c_late_history(cx):
    _late(cx, empty_cache=False)


@case("late_after_empty_cache", "as late_history, with torch.cuda.empty_cache() right after history "
      "was turned on: the trace begins with segment_free events of segments it never saw allocated")
def c_late_after_empty_cache(cx):
    _late(cx, empty_cache=True)


def _four_small_steps(cx, **history):
    """A few training steps of a small GPT stack, with history turned on as given (if at all)."""
    import torch
    torch.manual_seed(0)
    if history:
        cx.history(**history)
    vocab = 8192
    m = gpt(d=384, layers=4, vocab=vocab, heads=6)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    _gpt_train(cx, m, opt, shapes(4, seed=4), vocab)


@case("state_only", "_record_memory_history(enabled='state', context='state', stacks='python') for a "
      "few steps: end-state segments whose blocks carry frames; no alloc/free events are kept in this "
      "mode, device_traces is empty or close to it")
def c_state_only(cx):
    _four_small_steps(cx, enabled="state", context="state", stacks="python")
    cx.finish()


@case("no_history", "history never turned on, a few training steps, then _dump_snapshot: end-state "
      "segments, blocks without frames, empty device_traces")
def c_no_history(cx):
    _four_small_steps(cx)
    cx.finish()


@case("bare_list", "pickle.dump(torch.cuda.memory_snapshot()): the bare list of segments (no dict, no "
      "traces), after a few training steps with history on (enabled='all', stacks='python'), so "
      "blocks carry frames")
def c_bare_list(cx):
    _four_small_steps(cx, enabled="all", context="all", stacks="python")
    cx.finish("bare_list")


@case("no_traces", "a snapshot that leaves the traces out, after a few training steps with history "
      "on: _snapshot/_dump_snapshot have no such argument in PyTorch 2.11, "
      "torch.cuda.memory_snapshot(include_traces=False) has; the dict its C++ call returns (the "
      "form _dump_snapshot writes) is pickled")
def c_no_traces(cx):
    import torch
    sig_s = inspect.signature(torch.cuda.memory._snapshot)
    sig_d = inspect.signature(torch.cuda.memory._dump_snapshot)
    sig_m = inspect.signature(torch.cuda.memory.memory_snapshot)
    print("torch.cuda.memory._snapshot", sig_s, flush=True)
    print("torch.cuda.memory._dump_snapshot", sig_d, flush=True)
    print("torch.cuda.memory.memory_snapshot", sig_m, flush=True)
    for f in (torch.cuda.memory._snapshot, torch.cuda.memory.memory_snapshot):
        try:
            print(inspect.getsource(f), flush=True)
        except Exception as e:  # noqa: BLE001
            print("no source:", e, flush=True)
    cand = [p for p in sig_s.parameters if "trace" in p and "fx" not in p]
    if not cand and "include_traces" not in sig_m.parameters:
        print("SKIP: no snapshot function of torch.cuda.memory leaves the traces out", flush=True)
        sys.exit(SKIP)
    cx.truth["signatures"] = {"_snapshot": str(sig_s), "_dump_snapshot": str(sig_d),
                              "memory_snapshot": str(sig_m)}
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    vocab = 8192
    m = gpt(d=384, layers=4, vocab=vocab, heads=6)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    _gpt_train(cx, m, opt, shapes(4, seed=4), vocab)

    def write(path):
        if cand:
            p = cand[0]
            cx.truth["snapshot_argument"] = f"{p}=False"
            if p in sig_d.parameters:
                torch.cuda.memory._dump_snapshot(path, **{p: False})
                cx.truth["written_by"] = f"torch.cuda.memory._dump_snapshot(path, {p}=False)"
            else:
                with open(path, "wb") as f:
                    pickle.dump(torch.cuda.memory._snapshot(**{p: False}), f)
                cx.truth["written_by"] = f"pickle.dump(torch.cuda.memory._snapshot({p}=False), f)"
            return
        # memory_snapshot returns only the segments of what its C++ call gives: catch that whole
        # value (the same form as _snapshot's) as it passes
        seen = {}
        real = torch._C._cuda_memorySnapshot

        def spy(*args, **kw):
            seen["args"] = [repr(x) for x in args] + [f"{k}={v!r}" for k, v in kw.items()]
            seen["value"] = real(*args, **kw)
            return seen["value"]
        torch._C._cuda_memorySnapshot = spy
        try:
            segs = torch.cuda.memory.memory_snapshot(include_traces=False)
        finally:
            torch._C._cuda_memorySnapshot = real
        if "value" not in seen:  # memory_snapshot reached it another way: call it as it would
            for args, kw in (((None,), {"include_traces": False}), ((None, False), {})):
                try:
                    spy(*args, **kw)
                    break
                except TypeError as e:
                    print("torch._C._cuda_memorySnapshot", args, kw, e, flush=True)
        with open(path, "wb") as f:
            pickle.dump(seen["value"], f)
        with open(os.path.join(cx.out, cx.name + "_list.pickle"), "wb") as f:
            pickle.dump(segs, f)
        cx.truth["snapshot_argument"] = "include_traces=False"
        cx.truth["written_by"] = ("pickle.dump(d, f), d the value torch._C._cuda_memorySnapshot(" +
                                  ", ".join(seen["args"]) + ") returned inside "
                                  "torch.cuda.memory.memory_snapshot(include_traces=False); "
                                  + cx.name + "_list.pickle is what memory_snapshot returned")
        cx.truth["list_summary"] = summarize(segs)
    cx.finish(write)


@case("stacks_all", "_record_memory_history(stacks='all'): every entry carries C++ and Python frames; "
      "a tiny 2-layer model, 2 steps", timeout=300, fallback_env={"TORCH_SYMBOLIZE_MODE": "dladdr"})
def c_stacks_all(cx):
    import torch
    torch.manual_seed(0)
    cx.truth["symbolize_mode"] = os.environ.get("TORCH_SYMBOLIZE_MODE", "(default)")
    cx.history(enabled="all", context="all", stacks="all")
    vocab = 4096
    m = gpt(d=256, layers=2, vocab=vocab, heads=4)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    _gpt_train(cx, m, opt, [(4, 128), (4, 256)], vocab)
    cx.finish()


@case("explain_copies", "a stack of eight 1024x1024 Linear layers with ReLU run forward under "
      "torch.autocast(bfloat16) and no_grad, recorded with stacks='all': autocast casts each "
      "weight and bias to bfloat16 once and keeps the casts until the region ends, so at the last "
      "layer's output (the peak) sixteen casts are alive; PyTorch's memory_allocated() there, less "
      "what was allocated before and the two activations, counts their bytes",
      timeout=300, fallback_env={"TORCH_SYMBOLIZE_MODE": "dladdr"})
def c_explain_copies(cx):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    cx.truth["symbolize_mode"] = os.environ.get("TORCH_SYMBOLIZE_MODE", "(default)")
    d, layers, batch = 1024, 8, 512
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(d, d), nn.ReLU()]
    model = nn.Sequential(*mods[:-1]).cuda()  # ends with a Linear
    x = torch.randn(batch, d, device="cuda")
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        model(x)  # cuBLAS's workspace made now, not in the count
    torch.cuda.synchronize()
    cx.history(enabled="all", context="all", stacks="all")
    seen = {}

    def at_last_output(mod, args, out):
        # the last Linear's output is made: the casts of every layer and the two activations
        # (its input and its output, bfloat16) are alive with what was there before
        torch.cuda.synchronize()
        seen["allocated"] = torch.cuda.memory_allocated()
        seen["activations"] = args[0].numel() * args[0].element_size() + \
            out.numel() * out.element_size()
    hook = model[-1].register_forward_hook(at_last_output)
    before = torch.cuda.memory_allocated()
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        y = model(x)
        total = y.sum().item()  # in float32 without a cast (autocast's sum)
    hook.remove()
    linears = [m for m in model if isinstance(m, nn.Linear)]
    cx.truth["copies_at_peak"] = {
        "bytes": seen["allocated"] - before - seen["activations"],
        "allocations": 2 * len(linears),
        "bytes_from_the_parameters": sum(2 * (m.weight.numel() + m.bias.numel()) for m in linears),
        "how": "torch.cuda.memory_allocated() at the last Linear's forward hook, less before the "
               "forward and the two bfloat16 activations; the casts are one per weight and bias"}
    cx.truth["sum"] = total
    cx.finish()


def _hold_outside(nbytes):
    """cudaMalloc nbytes outside PyTorch's allocator; returns (how, free-function)."""
    try:
        import cupy
        ptr = cupy.cuda.runtime.malloc(nbytes)
        return "cupy.cuda.runtime.malloc (a plain cudaMalloc, not CuPy's pool)", \
            lambda: cupy.cuda.runtime.free(ptr)
    except ImportError:
        import ctypes
        import glob
        import torch
        libs = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "*", "lib",
                                      "libcudart.so*")) + ["libcudart.so"]
        rt = ctypes.CDLL(libs[0])
        p = ctypes.c_void_p()
        rc = rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(nbytes))
        if rc:
            raise RuntimeError(f"cudaMalloc failed: {rc}")
        return f"ctypes cudaMalloc from {libs[0]}", lambda: rt.cudaFree(p)


@case("oom_outside", "memory held outside PyTorch's allocator (a raw cudaMalloc leaving about 6 GiB "
      "free), then a GPT training loop with growing batches that OOMs; the error is caught and the "
      "snapshot dumped after")
def c_oom_outside(cx):
    import torch
    torch.manual_seed(0)
    torch.cuda.init()
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info(0)
    hold = (free - 6 * GiB) // (2 << 20) * (2 << 20)
    how, release = _hold_outside(hold)
    cx.truth["outside"] = {"bytes": hold, "how": how, "mem_get_info_before": {"free": free,
                           "total": total}, "mem_get_info_after": mem_info(0)}
    cx.history(enabled="all", context="all", stacks="python")
    vocab = 16000
    m = gpt(d=768, layers=6, vocab=vocab, heads=12)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    shp = [(2, 256), (4, 256), (4, 512), (8, 512), (8, 1024), (16, 1024), (16, 2048), (32, 2048),
           (64, 2048), (128, 2048)]
    cx.truth["shapes"] = shp
    try:
        _gpt_train(cx, m, opt, shp, vocab)
    except torch.cuda.OutOfMemoryError as e:
        cx.oom(e)
    cx.finish()
    release()


def _train_under_limit(cx, gib, shp, autocast_cache=True):
    """GPT training (6 layers, d=768) on shapes shp under a per-process limit of gib GiB, history
    on from the start; an OOM is caught and kept in the truth."""
    import torch
    torch.manual_seed(0)
    total = torch.cuda.mem_get_info(0)[1]
    cx.fraction(gib * GiB / total)
    cx.history(enabled="all", context="all", stacks="python")
    vocab = 16000
    m = gpt(d=768, layers=6, vocab=vocab, heads=12)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    cx.truth["shapes"] = shp
    try:
        _gpt_train(cx, m, opt, shp, vocab, autocast_cache)
    except torch.cuda.OutOfMemoryError as e:
        cx.oom(e)
    cx.finish()


@case("oom_fraction", "torch.cuda.set_per_process_memory_fraction(5 GiB / total_memory), then a GPT "
      "training loop with random batch and sequence lengths that OOMs under the limit; caught, "
      "snapshot dumped after")
def c_oom_fraction(cx):
    shp = [(2, 256), (4, 512), (4, 1024), (8, 512)] + \
        shapes(30, seed=5, bs=(2, 4, 8, 12, 16), ss=(128, 256, 512, 768, 1024, 1536, 2048)) + \
        [(16, 2048), (32, 2048)]
    _train_under_limit(cx, 5, shp)


def _mlp():
    import torch
    return torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                               torch.nn.Linear(4096, 4096), torch.nn.GELU(),
                               torch.nn.Linear(4096, 1024)).cuda()


def _warm_up(model, opt, x, y, steps=3):
    """Training steps on a side stream before a capture, as CUDA graphs want them."""
    import torch
    import torch.nn.functional as F
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            F.mse_loss(model(x), y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)


@case("graph_pools", "a small MLP's training step (SGD) captured as one CUDA graph "
      "(torch.cuda.graph, after 3 warm-up steps on a side stream) and replayed 30 times, and a second "
      "graph (a forward under no_grad) captured into the same pool (graph_pool_handle); history on "
      "from the start: the captures allocate in a private pool")
def c_graph_pools(cx):
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 1024, device="cuda")
    y = torch.randn(256, 1024, device="cuda")
    _warm_up(model, opt, x, y)
    pool = torch.cuda.graph_pool_handle()
    train = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(train, pool=pool):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    infer = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(infer, pool=pool):
        out = model(x)
    for _ in range(30):
        x.copy_(torch.randn_like(x))
        train.replay()
        cx.truth["steps"] += 1
    infer.replay()
    torch.cuda.synchronize()
    cx.truth["pool"] = list(pool)
    cx.truth["outputs"] = [float(loss.item()), float(out.float().abs().mean().item())]
    cx.finish()


@case("compile_reduce_overhead", "torch.compile(mode='reduce-overhead') (inductor's CUDA graph trees) "
      "of a small MLP, forward and backward with SGD, on batch sizes 64, 128 and 256, 4 steps each; "
      "history on from the start", timeout=480)
def c_compile_reduce_overhead(cx):
    import torch
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    model = _mlp()
    step_fn = torch.compile(model, mode="reduce-overhead")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for bs in (64, 128, 256):
        x = torch.randn(bs, 1024, device="cuda")
        for _ in range(4):
            opt.zero_grad(set_to_none=True)
            step_fn(x).float().pow(2).mean().backward()
            opt.step()
            cx.truth["steps"] += 1
    torch.cuda.synchronize()
    cx.finish()


@case("mempool", "torch.cuda.MemPool with use_mem_pool: tensors allocated outside and inside the pool, "
      "one inside freed and its room reused by the pool, a tensor outside that cannot use it, the pool "
      "deleted with its tensors and the cache emptied; history on from the start")
def c_mempool(cx):
    import torch
    cx.history(enabled="all", context="all", stacks="python")
    _mempool_job(cx, torch.cuda.MemPool)


def _mempool_job(cx, make_pool, counts=None):
    """Tensors outside and inside a MemPool (make_pool()), one inside freed and its room reused,
    one outside that cannot use it; the pool deleted with its tensors and the cache emptied.
    counts(): the pool's allocator's own figures, kept before and after the deletion."""
    import torch
    MiB = 1 << 20

    def t(n):
        return torch.empty(n, dtype=torch.uint8, device="cuda")
    outside = [t(3 * MiB), t(5 * MiB), t(MiB)]
    pool = make_pool()
    with torch.cuda.use_mem_pool(pool):
        inside = [t(4 * MiB), t(7 * MiB), t(MiB // 2), t(20 * MiB)]
    del inside[1]
    outside.append(t(6 * MiB))
    with torch.cuda.use_mem_pool(pool):
        inside.append(t(6 * MiB))
    cx.truth["pool_id"] = list(pool.id)
    keys = ("address", "total_size", "allocated_size", "segment_pool_id") + (
        ("is_expandable",) if counts else ())
    cx.truth["pool_segments"] = [{k: seg.get(k) for k in keys} for seg in pool.snapshot()]
    if counts:
        cx.truth["custom_allocator_before_delete"] = counts()
    cx.truth["before_delete"] = moment()
    del inside
    del pool
    gc.collect()
    torch.cuda.empty_cache()
    if counts:
        cx.truth["custom_allocator_after_delete"] = counts()
    cx.truth["after_delete"] = moment()
    del outside
    cx.finish()


# A CUDAPluggableAllocator for MemPool(allocator=...): cudaMalloc and cudaFree, counted, built at
# run time with the host's compiler and CUDA runtime (the signatures docs/torch-allocator.md 9.3
# gives).
_PLUGGABLE_C = r"""
#include <cuda_runtime_api.h>
#include <stddef.h>
static long long calls_alloc, calls_free, bytes_now;
void *ms_test_alloc(size_t n, int device, cudaStream_t stream)
{
	void *p = NULL;
	(void)device; (void)stream;
	if (cudaMalloc(&p, n) != cudaSuccess)
		return NULL;
	calls_alloc++;
	bytes_now += (long long)n;
	return p;
}
void ms_test_free(void *p, size_t n, int device, cudaStream_t stream)
{
	(void)device; (void)stream;
	cudaFree(p);
	calls_free++;
	bytes_now -= (long long)n;
}
long long ms_test_calls_alloc(void) { return calls_alloc; }
long long ms_test_calls_free(void) { return calls_free; }
long long ms_test_bytes_now(void) { return bytes_now; }
"""


def _pluggable(cx):
    import ctypes
    import torch
    src = os.path.join(cx.out, "ms_test_alloc.c")
    lib = os.path.join(cx.out, "ms_test_alloc.so")
    with open(src, "w") as f:
        f.write(_PLUGGABLE_C)
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-I" + cuda + "/include", src, "-o", lib,
                    "-L" + cuda + "/lib64", "-lcudart"], check=True)
    alloc = torch.cuda.memory.CUDAPluggableAllocator(lib, "ms_test_alloc", "ms_test_free")
    c = ctypes.CDLL(lib)
    for fn in ("ms_test_calls_alloc", "ms_test_calls_free", "ms_test_bytes_now"):
        getattr(c, fn).restype = ctypes.c_longlong
    return alloc, lambda: {"allocs": c.ms_test_calls_alloc(), "frees": c.ms_test_calls_free(),
                           "bytes": c.ms_test_bytes_now()}


@case("mempool_custom_allocator", "torch.cuda.MemPool(allocator=...) over a CUDAPluggableAllocator "
      "(cudaMalloc and cudaFree, counted): the mempool case's tensors inside and outside the pool, "
      "one inside freed and its room reused, the pool deleted with its tensors and the cache "
      "emptied; the truth holds the allocator's own call counts")
def c_mempool_custom_allocator(cx):
    import torch
    alloc, counts = _pluggable(cx)
    cx.history(enabled="all", context="all", stacks="python")
    _mempool_job(cx, lambda: torch.cuda.MemPool(alloc.allocator()), counts)


@case("graph_step_adam", "a small MLP's whole training step with Adam(capturable=True) captured as "
      "one CUDA graph (torch.cuda.graph, after 3 warm-up steps on a side stream) and replayed 20 "
      "times; history on from the start: the capture allocates in the graph's own pool")
def c_graph_step_adam(cx):
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    x = torch.randn(256, 1024, device="cuda")
    y = torch.randn(256, 1024, device="cuda")
    _warm_up(model, opt, x, y)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    for _ in range(20):
        x.copy_(torch.randn_like(x))
        g.replay()
        cx.truth["steps"] += 1
    torch.cuda.synchronize()
    cx.truth["pool"] = list(g.pool())
    cx.truth["outputs"] = [float(loss.item())]
    cx.finish()


@case("graphed_callables", "torch.cuda.make_graphed_callables on a small MLP (forward and backward "
      "graphs in one pool, warm-up on a side stream), then 10 SGD steps that replay them; history "
      "on from the start")
def c_graphed_callables(cx):
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, 1024, device="cuda", requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(model, (x,))
    for _ in range(10):
        xi = torch.randn(128, 1024, device="cuda", requires_grad=True)
        opt.zero_grad(set_to_none=True)
        F.mse_loss(graphed(xi), torch.zeros(128, 1024, device="cuda")).backward()
        opt.step()
        cx.truth["steps"] += 1
    torch.cuda.synchronize()
    cx.finish()


@case("decode_graphs", "a decode loop as vLLM runs one: a small MLP's forward (no_grad) captured "
      "once per batch size (16, 8, 4, 2, 1, largest first) into one shared pool "
      "(graph_pool_handle), each with its own static input, then 60 steps that copy a random "
      "batch into the matching input and replay its graph; history on from the start")
def c_decode_graphs(cx):
    import torch
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    model = _mlp().eval()
    pool = torch.cuda.graph_pool_handle()
    graphs, inputs, outputs = {}, {}, {}
    with torch.no_grad():
        for bs in (16, 8, 4, 2, 1):
            inputs[bs] = torch.zeros(bs * 32, 1024, device="cuda")
            model(inputs[bs])  # warm-up outside the pool
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                outputs[bs] = model(inputs[bs])
            graphs[bs] = g
        rng = random.Random(3)
        for _ in range(60):
            bs = rng.choice((1, 2, 4, 8, 16))
            inputs[bs].copy_(torch.randn(bs * 32, 1024, device="cuda"))
            graphs[bs].replay()
            outputs[bs].sum().item()
            cx.truth["steps"] += 1
    cx.truth["pool"] = list(pool)
    cx.finish()


def _use_on_oom_pool(cx, limit_gib):
    """Under a limit of limit_gib GiB, with history on: a MemPool(use_on_oom=True) holding a
    free 40 MiB block, and a maker of uint8 tensors of n bytes."""
    import torch
    if "use_on_oom" not in str(inspect.signature(torch.cuda.MemPool.__init__)):
        print("torch.cuda.MemPool has no use_on_oom")
        sys.exit(SKIP)
    total = torch.cuda.mem_get_info(0)[1]
    cx.fraction(limit_gib * GiB / total)
    cx.history(enabled="all", context="all", stacks="python")

    def t(n):
        return torch.empty(n, dtype=torch.uint8, device="cuda")
    pool = torch.cuda.MemPool(use_on_oom=True)
    with torch.cuda.use_mem_pool(pool):
        a = t(40 << 20)
    del a
    return pool, t


@case("mempool_on_oom", "torch.cuda.MemPool(use_on_oom=True) under a 2 GiB per-process limit: a "
      "40 MiB tensor made in the pool and freed (cached there), the default pool filled with "
      "100 MiB tensors until one fails, then with 12 MiB ones (which the pool's cached block "
      "serves once the default pool cannot) until one fails, then a 20 MiB tensor; history on "
      "from the start")
def c_mempool_on_oom(cx):
    import torch
    MiB = 1 << 20
    pool, t = _use_on_oom_pool(cx, 2)
    held = []
    try:
        while True:
            held.append(t(100 * MiB))
    except torch.cuda.OutOfMemoryError:
        pass
    try:
        while True:
            held.append(t(12 * MiB))
    except torch.cuda.OutOfMemoryError:
        pass
    cx.truth["held_outside"] = len(held)
    cx.truth["before_fallback"] = moment()
    try:
        b = t(20 * MiB)
        cx.truth["fallback_tensor_in_pool"] = any(
            seg["address"] <= b.data_ptr() < seg["address"] + seg["total_size"]
            for seg in pool.snapshot())
    except torch.cuda.OutOfMemoryError as e:
        cx.oom(e)
    cx.truth["pool_id"] = list(pool.id)
    cx.truth["after_fallback"] = moment()
    cx.finish()


def _mempool_on_oom_fixed(cx, limit_gib):
    """The same allocations whatever the limit: a use_on_oom MemPool caching a free 40 MiB
    block, nineteen 100 MiB tensors and eleven of 12 MiB outside any pool."""
    MiB = 1 << 20
    pool, t = _use_on_oom_pool(cx, limit_gib)
    held = [t(100 * MiB) for _ in range(19)]
    small = [t(12 * MiB) for _ in range(11)]
    cx.truth["in_pool"] = sum(
        any(seg["address"] <= x.data_ptr() < seg["address"] + seg["total_size"]
            for seg in pool.snapshot()) for x in small)
    cx.truth["pool_id"] = list(pool.id)
    cx.truth["end"] = moment()
    del held, small
    cx.finish()


@case("mempool_on_oom_fixed", "torch.cuda.MemPool(use_on_oom=True) under a 2 GiB per-process "
      "limit: a 40 MiB tensor made in the pool and freed (cached there), then nineteen 100 MiB "
      "tensors and eleven of 12 MiB outside any pool: the last three 12 MiB ones do not fit and "
      "the pool's cached block serves them; history on from the start")
def c_mempool_on_oom_fixed(cx):
    _mempool_on_oom_fixed(cx, 2)


@case("mempool_on_oom_roomy", "the allocations of mempool_on_oom_fixed under a 2.25 GiB limit, "
      "where all eleven 12 MiB tensors fit in the default pool: what a replay of "
      "mempool_on_oom_fixed with that limit must predict")
def c_mempool_on_oom_roomy(cx):
    _mempool_on_oom_fixed(cx, 2.25)


def _retry_setup(cx):
    """Under a 1 GiB limit, with history on: the tensors kept, each request's outcome by key, and
    ask(key), which requests 700 MiB and notes whether it was served."""
    import torch
    total = torch.cuda.mem_get_info(0)[1]
    cx.fraction(GiB / total)
    cx.history(enabled="all", context="all", stacks="python")
    held, outcome = [], {}

    def ask(key):
        try:
            held.append(torch.empty(700 << 20, dtype=torch.uint8, device="cuda"))
            outcome[key] = "served"
        except torch.cuda.OutOfMemoryError as e:
            outcome[key] = "out of memory"
            cx.oom(e)
        except RuntimeError as e:  # a CUDA error: what the run did is the truth
            outcome[key] = "error: " + str(e).splitlines()[0]
    return held, outcome, ask


@case("mempool_scope_blocks_retry", "under a 1 GiB limit, a 600 MiB tensor freed (cached in the "
      "default pool), then a MemPool's use_mem_pool opened and, on another thread (whose "
      "allocations it does not route), a 700 MiB tensor asked for: the allocator does not give "
      "back cached segments while a pool is in use and runs out of memory; after the "
      "use_mem_pool the same request flushes the cache and is served")
def c_mempool_scope_blocks_retry(cx):
    import threading
    import torch
    MiB = 1 << 20
    held, outcome, ask = _retry_setup(cx)
    a = torch.empty(600 * MiB, dtype=torch.uint8, device="cuda")
    del a
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        th = threading.Thread(target=ask, args=("inside",))
        th.start()
        th.join()
    ask("after")
    cx.truth["outcome"] = outcome
    cx.truth["pool_id"] = list(pool.id)
    cx.truth["end"] = moment()
    held.clear()  # the tensors go: ask keeps the list
    cx.finish()


@case("graph_capture_blocks_retry", "under a 1 GiB limit, a 600 MiB tensor made, then a CUDA "
      "graph captured (capture_error_mode='thread_local') during which the tensor is freed "
      "(cached in the default pool) and another thread asks for a 700 MiB tensor: the allocator "
      "does not give cached segments back during a capture and runs out of memory; after the "
      "capture the same request flushes the cache and is served")
def c_graph_capture_blocks_retry(cx):
    import threading
    import torch
    MiB = 1 << 20
    held, outcome, ask = _retry_setup(cx)
    x = torch.ones(1 << 20, device="cuda")
    a = torch.empty(600 * MiB, dtype=torch.uint8, device="cuda")
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g, capture_error_mode="thread_local"):
            y = x * 2
            del a
            th = threading.Thread(target=ask, args=("inside",))
            th.start()
            th.join()
        g.replay()
        outcome["capture"] = "captured and replayed"
    except RuntimeError as e:
        outcome["capture"] = "error: " + str(e).splitlines()[0]
        y = None
    torch.cuda.synchronize()
    ask("after")
    cx.truth["outcome"] = outcome
    cx.truth["graph_pool"] = list(g.pool())
    cx.truth["end"] = moment()
    held.clear()  # the tensors go: ask keeps the list
    del y
    cx.finish()


for _name in ("mempool_scope_blocks_retry", "graph_capture_blocks_retry"):
    _c = CASES[_name]
    case(_name + "_gc", _c["what"] + "; with PYTORCH_CUDA_ALLOC_CONF="
         "'garbage_collection_threshold:0.6', whose collector runs before a new segment is asked "
         "for, with no check for an open scope or capture",
         env={"PYTORCH_CUDA_ALLOC_CONF": "garbage_collection_threshold:0.6"})(_c["fn"])


def _capture_record_stream(cx):
    """Inside a CUDA graph capture, a 12 MiB tensor made on the capture stream, used on a second
    stream that joins the capture and record_stream'ed there, then deleted (its free deferred:
    no event may be recorded during a capture); after the second stream's work is joined back, a
    tensor of the same size asked for on the capture stream. With
    graph_capture_record_stream_reuse the allocator may see from the graph that the first
    tensor's uses are over and hand its block out again; without it the block waits for the
    capture's end and the second tensor gets a segment of its own."""
    import torch
    MiB = 1 << 20
    cx.history(enabled="all", context="all", stacks="python")
    x = torch.ones(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        cap = torch.cuda.current_stream()
        t = torch.empty(12 * MiB, dtype=torch.uint8, device="cuda")
        t.fill_(1)
        side.wait_stream(cap)
        with torch.cuda.stream(side):
            t.add_(1)
            t.record_stream(side)
        cap.wait_stream(side)
        del t
        u = torch.empty(12 * MiB, dtype=torch.uint8, device="cuda")
        u.fill_(2)
        cx.truth["segments_in_capture"] = len(
            [s for s in torch.cuda.memory_snapshot() if tuple(s["segment_pool_id"]) != (0, 0)])
        y = x * 2
    g.replay()
    torch.cuda.synchronize()
    cx.truth["graph_pool"] = list(g.pool())
    cx.truth["end"] = moment()
    del u, y
    cx.finish()


case("graph_capture_record_stream", _capture_record_stream.__doc__.replace("\n    ", " ").split(
    ". With")[0] + "; default settings (the block waits for the capture's end)")(
    _capture_record_stream)
case("graph_capture_record_stream_reuse", _capture_record_stream.__doc__.replace(
    "\n    ", " ").split(". With")[0] + "; with PYTORCH_CUDA_ALLOC_CONF="
     "'graph_capture_record_stream_reuse:True'",
     env={"PYTORCH_CUDA_ALLOC_CONF": "graph_capture_record_stream_reuse:True"})(
    _capture_record_stream)


def _capture_empty_cache(cx, manual):
    """torch.cuda.empty_cache() called inside a CUDA graph capture (capture_error_mode=
    'thread_local'), while the default pool caches a free 20 MiB segment and an earlier graph,
    reset, left its private pool freeable with a free 12 MiB segment; then empty_cache() again
    after the capture. Under torch.cuda.graph, whose entry empties the cache itself, the call
    inside finds nothing left; under CUDAGraph.capture_begin it finds both."""
    import torch
    MiB = 1 << 20
    cx.history(enabled="all", context="all", stacks="python")

    def segs():
        by = {}
        for s in torch.cuda.memory_snapshot():
            k = "default" if tuple(s["segment_pool_id"]) == (0, 0) else "private"
            by[k] = by.get(k, 0) + s["total_size"]
        return by

    def inside(outcome):
        try:
            torch.cuda.empty_cache()
            outcome["empty_cache_in_capture"] = "returned"
        except RuntimeError as e:
            outcome["empty_cache_in_capture"] = "error: " + str(e).splitlines()[0]
        outcome["in_capture"] = segs()
    x = torch.ones(1 << 20, device="cuda")
    old = torch.cuda.CUDAGraph()
    with torch.cuda.graph(old):
        t = torch.empty(12 * MiB, dtype=torch.uint8, device="cuda")
        t.fill_(1)
    del t
    old.reset()  # its pool: no user left, freeable, its 12 MiB segment cached
    a = torch.empty(20 * MiB, dtype=torch.uint8, device="cuda")
    del a  # a whole free 20 MiB segment in the default pool
    cx.truth["before"] = segs()
    g = torch.cuda.CUDAGraph()
    outcome = {}
    y = None
    try:
        if manual:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                g.capture_begin(capture_error_mode="thread_local")
                try:
                    y = x * 2
                    inside(outcome)
                finally:
                    g.capture_end()
            torch.cuda.current_stream().wait_stream(side)
        else:
            with torch.cuda.graph(g, capture_error_mode="thread_local"):
                y = x * 2
                inside(outcome)
        g.replay()
        outcome["capture"] = "captured and replayed"
        cx.truth["graph_pool"] = list(g.pool())
    except RuntimeError as e:
        outcome["capture"] = "error: " + str(e).splitlines()[0]
    torch.cuda.synchronize()
    outcome["after_capture"] = segs()
    torch.cuda.empty_cache()
    outcome["after_empty_cache"] = segs()
    cx.truth["outcome"] = outcome
    cx.truth["end"] = moment()
    del y
    cx.finish()


_doc = _capture_empty_cache.__doc__.replace("\n    ", " ").split(". Under")[0]
case("graph_capture_empty_cache", _doc + "; the capture made by torch.cuda.graph (its entry "
     "empties the cache first); history on from the start")(
    lambda cx: _capture_empty_cache(cx, False))
case("graph_capture_begin_empty_cache", _doc + "; the capture begun with "
     "CUDAGraph.capture_begin on a side stream (nothing emptied before it); history on from the "
     "start")(lambda cx: _capture_empty_cache(cx, True))


@case("mempool_no_split", "torch.cuda.MemPool(no_split=True), then the same in a MemPool without "
      "it: in each, a 30 MiB tensor made and freed (its segment cached in the pool), two 10 MiB "
      "tensors (no_split: the first takes the cached 30 MiB block whole, the second a new "
      "segment; splitting: both from the cached block) and four of 4 KiB (no_split: a 2 MiB "
      "small segment each); history on from the start")
def c_mempool_no_split(cx):
    import torch
    MiB = 1 << 20
    if "no_split" not in str(inspect.signature(torch.cuda.MemPool.__init__)):
        print("torch.cuda.MemPool has no no_split")
        sys.exit(SKIP)
    cx.history(enabled="all", context="all", stacks="python")

    def t(n):
        return torch.empty(n, dtype=torch.uint8, device="cuda")
    held = []
    for no_split in (True, False):
        pool = torch.cuda.MemPool(no_split=no_split)
        with torch.cuda.use_mem_pool(pool):
            a = t(30 * MiB)
            del a
            held += [t(10 * MiB), t(10 * MiB)]
            held += [t(4096) for _ in range(4)]
        cx.truth[f"pool_no_split_{int(no_split)}_id"] = list(pool.id)
        cx.truth[f"pool_no_split_{int(no_split)}_segments"] = len(pool.snapshot())
    cx.truth["end"] = moment()
    cx.finish()


def _settings_run(cx):
    """The same training under a 6 GiB limit, whatever PYTORCH_CUDA_ALLOC_CONF the case sets.
    Autocast's cache is off: it frees its casts in the order of a hash table keyed by address,
    which differs from run to run, so that two runs would not make the same calls."""
    _train_under_limit(cx, 6, shapes(24, seed=9, bs=(2, 4, 8, 12), ss=(256, 512, 1024, 1536)),
                       autocast_cache=False)


SETTINGS = {
    "settings_default": "",
    "settings_default_rerun": "",
    "settings_rp4": "roundup_power2_divisions:4",
    "settings_expandable": "expandable_segments:True",
    "settings_ms128": "max_split_size_mb:128",
    "settings_gc06": "garbage_collection_threshold:0.6",
    "settings_gc06_ms256": "garbage_collection_threshold:0.6,max_split_size_mb:256",
    "settings_gc04": "garbage_collection_threshold:0.4",
    "settings_gc08": "garbage_collection_threshold:0.8",
    "settings_gc095": "garbage_collection_threshold:0.95",
    "settings_rp_list": "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
    "settings_rp_list_gc06": "roundup_power2_divisions:[128:1,>:4],garbage_collection_threshold:0.6",
    "settings_expandable_rp4": "expandable_segments:True,roundup_power2_divisions:4",
    "settings_rp8": "roundup_power2_divisions:8",
    "settings_ms64_gc07": "max_split_size_mb:64,garbage_collection_threshold:0.7",
    "settings_rp2_ms256": "roundup_power2_divisions:2,max_split_size_mb:256",
}
for _name, _conf in SETTINGS.items():
    case(_name, f"GPT training (6 layers, d=768, AdamW, bf16 autocast without its cache, 24 steps "
         f"of random batch and sequence lengths) under a 6 GiB per-process limit with PYTORCH_CUDA_ALLOC_CONF="
         f"'{_conf}': one of a set recorded alike under different settings, so that a replay of one "
         f"under another's settings can be checked against what PyTorch did",
         env={"PYTORCH_CUDA_ALLOC_CONF": _conf} if _conf else None)(_settings_run)


def ddp_rank(rank, world, port, out, what):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world))
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.cuda.set_device(0)
    cx = Ctx(f"ddp_gloo_rank{rank}", out, what)
    cx.truth.update(rank=rank, world_size=world, backend="gloo", cuda_device=0,
                    shared_device_note="both ranks ran on cuda:0 of the same GPU because only one "
                                       "GPU was available; mem_get_info counts both processes")
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    vocab = 8192
    m = DDP(gpt(d=384, layers=4, vocab=vocab, heads=6), device_ids=[0])
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    torch.manual_seed(100 + rank)
    _gpt_train(cx, m, opt, shapes(6, seed=10 + rank), vocab)
    dist.barrier()
    cx.finish()
    dist.barrier()
    dist.destroy_process_group()


@case("ddp_gloo", "2-process DDP (backend gloo, both ranks on cuda:0), each rank records its own "
      "snapshot: GPT training with random shapes, gradients all-reduced through gloo",
      outputs=["ddp_gloo_rank0", "ddp_gloo_rank1"], timeout=240)
def c_ddp_gloo(cx):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen([sys.executable, HERE, "--ddp-rank", str(r), "--port", str(port),
                               "--out", cx.out]) for r in range(2)]
    rcs = [p.wait(timeout=220) for p in procs]
    print("ddp ranks exited", rcs, flush=True)
    if any(rcs):
        sys.exit(1)


@case("fsdp2", "FSDP2 (torch.distributed.fsdp.fully_shard on each block and the model) over a "
      "one-rank NCCL process group on cuda:0: GPT training with random shapes, AdamW; the "
      "parameters are DTensors whose all-gathers and reduce-scatters go through the caching "
      "allocator; history on from the start", timeout=240)
def c_fsdp2(cx):
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1")
    torch.cuda.set_device(0)
    cx.truth.update(rank=0, world_size=1, backend="nccl", cuda_device=0,
                    shared_device_note="one rank: a second rank needs a second GPU")
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    vocab = 8192
    m = gpt(d=384, layers=4, vocab=vocab, heads=6)
    for blk in m.blocks:
        fully_shard(blk)
    fully_shard(m)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    _gpt_train(cx, m, opt, shapes(6, seed=12), vocab)
    cx.finish()
    dist.destroy_process_group()


def _hf_gpt2(cx, n_embd, n_layer, n_head, steps, seed):
    import torch
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cx.truth["transformers"] = transformers.__version__
    cx.history(enabled="all", context="all", stacks="python")
    cfg = GPT2Config(vocab_size=8192, n_positions=512, n_embd=n_embd, n_layer=n_layer, n_head=n_head)
    m = GPT2LMHeadModel(cfg).cuda()
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    for b, s in shapes(steps, seed=seed, bs=(2, 4, 8), ss=(64, 128, 256, 512)):
        ids = torch.randint(0, cfg.vocab_size, (b, s), device="cuda")
        out = m(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        out.loss.item()
        del out, ids
        cx.truth["steps"] += 1
    cx.truth["attn_implementation"] = getattr(m.config, "_attn_implementation", None)
    cx.finish()


@case("hf_gpt2", "transformers GPT2LMHeadModel from a small GPT2Config (4 layers, n_embd 384, random "
      "weights), AdamW, 6 steps with random batch and sequence lengths; history on from the start, "
      "Python stacks")
def c_hf_gpt2(cx):
    _hf_gpt2(cx, n_embd=384, n_layer=4, n_head=6, steps=6, seed=6)


@case("hf_gpt2_long", "transformers GPT2LMHeadModel (6 layers, n_embd 512, random weights), AdamW, "
      "400 steps with random batch and sequence lengths; history on from the start, Python stacks: "
      "a long real trace (about half a million entries) for the benchmarks", timeout=480)
def c_hf_gpt2_long(cx):
    _hf_gpt2(cx, n_embd=512, n_layer=6, n_head=8, steps=400, seed=16)


def _lightning_gpt(cx, precision, at_end, seen=None):
    """pytorch-lightning's Trainer(max_steps=8, one GPU) fitting the GPT of record_snapshots
    (d 384, 4 layers) with AdamW on random token batches, history on from the start; at_end(module)
    runs in on_train_end, before the Trainer's teardown moves the model to the CPU and empties the
    cache; seen (a dict), if given, takes each step's gradients as the optimizer gets them.
    Returns the Trainer."""
    import tempfile
    import torch
    try:
        import pytorch_lightning as pl
    except ImportError:
        import lightning.pytorch as pl
    import torch.nn.functional as F
    torch.manual_seed(0)
    cx.truth["lightning"] = pl.__version__
    vocab = 8192
    cx.history(enabled="all", context="all", stacks="python")

    class LM(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = gpt(d=384, layers=4, vocab=vocab, heads=6)

        def training_step(self, batch, i):
            (x,) = batch
            logits = self.net(x)
            return F.cross_entropy(logits.float().view(-1, vocab), x.view(-1))

        def on_before_optimizer_step(self, optimizer):
            if seen is not None:
                seen["grads"] = [p.grad for p in self.parameters() if p.grad is not None]

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-4)

        def on_train_end(self):
            cx.truth["steps"] = self.trainer.global_step
            at_end(self)

    data = torch.utils.data.TensorDataset(torch.randint(0, vocab, (64, 256)))
    dl = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True, num_workers=0)
    with tempfile.TemporaryDirectory() as tmp:
        tr = pl.Trainer(max_steps=8, accelerator="gpu", devices=1, precision=precision,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, default_root_dir=tmp)
        tr.fit(LM(), dl)
    return tr


@case("lightning", "pytorch-lightning Trainer(max_steps=8, one GPU, bf16-mixed) fitting a small GPT "
      "LightningModule on random token batches; history on from the start; dumped in the module's "
      "on_train_end hook, before the Trainer's teardown", outputs=["lightning", "lightning_teardown"])
def c_lightning(cx):
    tr = _lightning_gpt(cx, "bf16-mixed", lambda m: cx.finish(stop_history=False))
    cx.name = "lightning_teardown"
    cx.truth["case"] = cx.name
    cx.truth["what"] = ("the same pytorch-lightning run dumped after Trainer.fit returned: its "
                        "teardown moved the model to the CPU and called empty_cache, so the trace "
                        "ends with segment_free events and no segment is left")
    cx.truth["steps"] = tr.global_step
    cx.finish()


@case("timm", "timm resnet18 (pretrained=False, 100 classes), SGD with momentum, fp32, 5 steps of "
      "batch 32 at 224x224; history on from the start (cuDNN workspaces through the caching allocator)")
def c_timm(cx):
    import torch
    import torch.nn.functional as F
    try:
        import timm
    except ImportError:
        print("SKIP: timm is not installed", flush=True)
        sys.exit(SKIP)
    torch.manual_seed(0)
    cx.truth["timm"] = timm.__version__
    cx.history(enabled="all", context="all", stacks="python")
    m = timm.create_model("resnet18", pretrained=False, num_classes=100).cuda()
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    for _ in range(5):
        x = torch.randn(32, 3, 224, 224, device="cuda")
        y = torch.randint(0, 100, (32,), device="cuda")
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
        del x, y, loss
        cx.truth["steps"] += 1
    cx.finish()


# ---------------------------------------------------------------------------------------------
# training loops for `memsnap explain`: each truth also holds what the model and the optimizer
# hold, counted by PyTorch itself (tensor bytes, not blocks), for the categories at the peak

def tensor_bytes(ts):
    return sum(t.numel() * t.element_size() for t in ts)


def model_truth(cx, model, opt, grads):
    """The bytes of the parameters, of the gradients (grads: the .grad tensors as the last
    optimizer step saw them) and of the optimizer's CUDA state, into cx.truth["model"]."""
    import torch
    params = [p for p in model.parameters() if p.is_cuda]
    state = [t for st in opt.state.values() for t in st.values()
             if torch.is_tensor(t) and t.is_cuda]
    cx.truth["model"] = {
        "parameter_tensors": len(params), "parameter_bytes": tensor_bytes(params),
        "trainable_parameter_bytes": tensor_bytes(p for p in params if p.requires_grad),
        "gradient_tensors": len(grads), "gradient_bytes": tensor_bytes(grads),
        "optimizer": type(opt).__name__, "optimizer_state_tensors": len(state),
        "optimizer_state_bytes": tensor_bytes(state),
        "buffer_bytes": tensor_bytes(b for b in model.buffers() if b.is_cuda),
    }


def _explain_loop(cx, model, opt, steps, batch, keep=None, set_to_none=True, amp=False,
                  after_step=None, before_step=None):
    """A plain loop: forward, backward, optimizer step, zero_grad; keep: a list that takes each
    step's logits (a leak, as a loss-curve list that keeps tensors would); after_step: called at
    the end of each iteration (a profiler's step()); before_step(i): at its start."""
    import torch
    import torch.nn.functional as F
    vocab = model.head.out_features
    grads = []
    for i in range(steps):
        if before_step:
            before_step(i)
        x = torch.randint(0, vocab, batch, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            logits = model(x)
            loss = F.cross_entropy(logits.float().view(-1, vocab), x.view(-1))
        loss.backward()
        if i == steps - 1:
            grads = [p.grad for p in model.parameters() if p.grad is not None]
        opt.step()
        opt.zero_grad(set_to_none=set_to_none)
        if keep is not None:
            keep.append(logits.detach())
        loss.item()
        del x, logits, loss
        cx.truth["steps"] += 1
        if after_step:
            after_step()
    model_truth(cx, model, opt, grads)


def _adamw_gpt(cx):
    """History on (all, Python stacks), then the 4-layer GPT (d 384, vocab 8192, seed 0) and its
    AdamW (lr 1e-4): the model of the explain_* AdamW loops."""
    import torch
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    m = gpt(d=384, layers=4, vocab=8192, heads=6)
    return m, torch.optim.AdamW(m.parameters(), lr=1e-4)


@case("explain_adamw", "a 4-layer GPT (d 384, vocab 8192; plain PyTorch) trained 8 steps of batch "
      "8 x 256 with AdamW (foreach), zero_grad(set_to_none=True), fp32; history on from the start, "
      "Python stacks; the truth holds the parameter, gradient and optimizer-state bytes")
def c_explain_adamw(cx):
    import torch
    m, opt = _adamw_gpt(cx)
    _explain_loop(cx, m, opt, 8, (8, 256))
    cx.finish()


@case("explain_profiler", "the AdamW loop of explain_adamw, 8 steps, under torch.profiler (CPU "
      "activity, every step active) whose step() opens a ProfilerStep#N scope per iteration: "
      "the snapshot's external_annotations carry them; the truth counts them")
def c_explain_profiler(cx):
    import torch
    m, opt = _adamw_gpt(cx)
    sched = torch.profiler.schedule(wait=0, warmup=0, active=100)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=sched) as prof:
        _explain_loop(cx, m, opt, 8, (8, 256), after_step=prof.step)
    snap = torch.cuda.memory._snapshot()
    names = [a["name"] for a in snap.get("external_annotations", []) if a["stage"] == "START"]
    cx.truth["profiler_steps"] = sorted({n for n in names if n.startswith("ProfilerStep#")},
                                        key=lambda n: int(n.split("#")[1]))
    cx.finish()


@case("explain_metadata", "the AdamW loop of explain_adamw, 8 steps, each iteration begun with "
      "torch.cuda.memory._set_memory_metadata('step N'), which PyTorch attaches to every later "
      "allocation (user_metadata); the truth holds the labels and the number of steps")
def c_explain_metadata(cx):
    import torch
    m, opt = _adamw_gpt(cx)
    labels = []

    def label(i):
        labels.append(f"step {i}")
        torch.cuda.memory._set_memory_metadata(labels[-1])
    _explain_loop(cx, m, opt, 8, (8, 256), before_step=label)
    torch.cuda.memory._set_memory_metadata("")
    cx.truth["metadata_labels"] = labels
    cx.finish()


@case("explain_scopes", "inference with the GPT of explain_adamw (eval, no_grad, no optimizer): 6 "
      "iterations, each inside torch.profiler.record_function('decode_step'), the first "
      "preceded by a warm-up outside any scope, each keeping its logits (8 x 256 x 8192 floats, "
      "64 MiB) in a list; the truth holds the kept bytes")
def c_explain_scopes(cx):
    import torch
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    m = gpt(d=384, layers=4, vocab=8192, heads=6).eval()
    kept = []
    with torch.no_grad():
        m(torch.randint(0, 8192, (2, 64), device="cuda"))  # warm-up, outside the scopes
        for i in range(6):
            with torch.profiler.record_function("decode_step"):
                x = torch.randint(0, 8192, (8, 256), device="cuda")
                kept.append(m(x))
                del x
            cx.truth["steps"] += 1
    cx.truth["leak"] = {"tensors": len(kept), "bytes_per_step": tensor_bytes(kept[:1]),
                        "bytes": tensor_bytes(kept)}
    cx.finish()


@case("explain_sgd", "the same GPT with SGD (momentum 0.9) and zero_grad(set_to_none=False): the "
      "gradients stay from the first backward on; 8 steps, bf16 autocast")
def c_explain_sgd(cx):
    import torch
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    m = gpt(d=384, layers=4, vocab=8192, heads=6)
    opt = torch.optim.SGD(m.parameters(), lr=1e-2, momentum=0.9)
    _explain_loop(cx, m, opt, 8, (8, 256), set_to_none=False, amp=True)
    cx.finish()


@case("explain_leak", "the AdamW loop of explain_adamw keeping every step's logits in a list "
      "(8 x 256 x 8192 floats, 64 MiB a step), 10 steps")
def c_explain_leak(cx):
    import torch
    m, opt = _adamw_gpt(cx)
    kept = []
    _explain_loop(cx, m, opt, 10, (8, 256), keep=kept)
    cx.truth["leak"] = {"tensors": len(kept), "bytes_per_step": tensor_bytes(kept[:1]),
                        "bytes": tensor_bytes(kept)}
    cx.finish()


def _hf_train(cx, m, vocab):
    """A transformers causal LM trained 6 AdamW steps of batch 4 x 256 on random tokens; the
    truth gets the model's parameter, gradient and optimizer-state bytes."""
    import torch
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    grads = []
    for i in range(6):
        ids = torch.randint(0, vocab, (4, 256), device="cuda")
        out = m(input_ids=ids, labels=ids)
        out.loss.backward()
        if i == 5:
            grads = [p.grad for p in m.parameters() if p.grad is not None]
        opt.step()
        opt.zero_grad(set_to_none=True)
        out.loss.item()
        del out, ids
        cx.truth["steps"] += 1
    model_truth(cx, m, opt, grads)
    cx.finish()


def _hf_begin(cx):
    """A transformers case's start: the seed, the library's version in the truth, history on."""
    import torch
    import transformers
    torch.manual_seed(0)
    cx.truth["transformers"] = transformers.__version__
    cx.history(enabled="all", context="all", stacks="python")


@case("explain_hf_gpt2", "transformers GPT2LMHeadModel (4 layers, n_embd 384, vocab 8192, random "
      "weights), AdamW, 6 steps of batch 4 x 256; the truth holds the parameter, gradient and "
      "optimizer-state bytes")
def c_explain_hf_gpt2(cx):
    _hf_begin(cx)
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=8192, n_positions=512, n_embd=384, n_layer=4, n_head=6)
    m = GPT2LMHeadModel(cfg).cuda()
    _hf_train(cx, m, cfg.vocab_size)


@case("explain_llama", "transformers LlamaForCausalLM (4 layers, hidden 384, 6 heads, 2 of them "
      "key-value, vocab 8192, random weights), AdamW, 6 steps of batch 4 x 256; the truth holds the "
      "parameter, gradient and optimizer-state bytes")
def c_explain_llama(cx):
    _hf_begin(cx)
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=8192, hidden_size=384, intermediate_size=1024,
                      num_hidden_layers=4, num_attention_heads=6, num_key_value_heads=2,
                      max_position_embeddings=512)
    m = LlamaForCausalLM(cfg).cuda()
    _hf_train(cx, m, cfg.vocab_size)


@case("explain_empty_cache", "the GPT of explain_adamw trained 8 steps with AdamW, calling "
      "torch.cuda.empty_cache() after every step; the truth holds the calls and PyTorch's count of "
      "cudaMalloc calls (num_device_alloc)")
def c_explain_empty_cache(cx):
    import torch
    torch.manual_seed(0)
    cx.history(enabled="all", context="all", stacks="python")
    vocab = 8192
    m = gpt(d=384, layers=4, vocab=vocab, heads=6).cuda()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    calls = 0
    for _ in range(8):
        ids = torch.randint(0, vocab, (8, 256), device="cuda")
        loss = torch.nn.functional.cross_entropy(m(ids).flatten(0, 1), ids.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
        del loss, ids
        torch.cuda.empty_cache()
        calls += 1
        cx.truth["steps"] += 1
    cx.truth["empty_cache_calls"] = calls
    cx.truth["cuda_malloc_calls"] = torch.cuda.memory_stats()["num_device_alloc"]
    cx.finish()


def _fragmented_oom(cx):
    """Under a 1 GiB limit: a 600 MiB tensor freed, a 400 MiB one kept (split from its cached
    block), then one of 600 MiB. The default allocator has 600 MiB reserved, 200 MiB of it free
    in a segment it cannot give back (the 400 MiB tensor lives there), and runs out of memory;
    expandable segments unmap the free 200 MiB and serve it."""
    import torch
    MiB = 1 << 20
    total = torch.cuda.mem_get_info(0)[1]
    cx.fraction(GiB / total)
    cx.history(enabled="all", context="all", stacks="python")

    def t(n):
        return torch.empty(n * MiB, dtype=torch.uint8, device="cuda")
    a = t(600)
    del a
    kept = t(400)
    cx.truth["before_large"] = moment()
    try:
        big = t(600)
        cx.truth["large_served"] = True
        del big
    except torch.cuda.OutOfMemoryError as e:
        cx.truth["large_served"] = False
        cx.oom(e)
    del kept
    cx.finish()


@case("explain_frag_oom", "under a 1 GiB limit, a 600 MiB tensor freed, a 400 MiB one kept (split "
      "from the cached block), then one of 600 MiB: out of memory with 200 MiB cached but free in "
      "a segment that cannot be given back (caught, dumped after); explain_frag_oom_expandable is "
      "the same job run again under expandable_segments:True, which serves it")
def c_explain_frag_oom(cx):
    _fragmented_oom(cx)


@case("explain_frag_oom_expandable", "explain_frag_oom's job under "
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the last 600 MiB tensor is served; its peaks "
      "are what a replay of explain_frag_oom under that setting must predict",
      env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
def c_explain_frag_oom_expandable(cx):
    _fragmented_oom(cx)


@case("explain_lightning", "pytorch-lightning Trainer(max_steps=8, one GPU, fp32) fitting the GPT "
      "as a LightningModule with AdamW on random token batches; dumped in on_train_end; the truth "
      "holds the parameter, gradient and optimizer-state bytes")
def c_explain_lightning(cx):
    seen = {}

    def at_end(m):
        model_truth(cx, m, m.trainer.optimizers[0], seen.get("grads", []))
        cx.finish(stop_history=False)

    _lightning_gpt(cx, "32-true", at_end, seen)


# ---------------------------------------------------------------------------------------------
# generation jobs for `memsnap explain`'s inference categories: each truth holds the weights'
# bytes counted from the model and, for each request, the KV cache's bytes computed from the
# shapes (layers x batch x key-value heads x head size x tokens x 2 (keys and values) x dtype
# size) and the request's wall-clock span (time.time_ns() // 1000, the clock of the trace's time_us)

INFER_REQUESTS = [(1, 32, 48), (2, 64, 32), (4, 16, 64)]  # (batch, prompt tokens, new tokens)


def weights_truth(model):
    """The bytes of the model's CUDA parameters and buffers, each storage once (tied weights)."""
    seen, n, nbytes = set(), 0, 0
    for t in list(model.parameters()) + list(model.buffers()):
        if not t.is_cuda:
            continue
        s = t.untyped_storage()
        if s.data_ptr() in seen:
            continue
        seen.add(s.data_ptr())
        n += 1
        nbytes += s.nbytes()
    return {"tensors": n, "bytes": nbytes}


def now_us():
    return time.time_ns() // 1000


def _kv_shape(cfg):
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    return cfg.num_hidden_layers, kv, cfg.hidden_size // heads


def _count_forwards(model, seen):
    """A hook on the model's top-level calls: seen["forwards"] counts them; seen["bytes"],
    seen["tensors"] and seen["shapes"] take the keys and values of the cache the call returns
    (from their shapes; no reference is kept)."""
    import torch

    def after_forward(module, args, kwargs, output):
        seen["forwards"] = seen.get("forwards", 0) + 1
        pkv = getattr(output, "past_key_values", None)
        ts = []
        for layer in getattr(pkv, "layers", None) or []:
            ts += [layer.keys, layer.values]
        ts = [t for t in ts if torch.is_tensor(t) and t.is_cuda]
        if ts:
            seen["bytes"], seen["tensors"] = tensor_bytes(ts), len(ts)
            seen["shapes"] = sorted({tuple(t.shape) for t in ts})
    return model.register_forward_hook(after_forward, with_kwargs=True)


def _static_layers_made(made):
    """Appends to made (shape, bytes) of each static cache layer's keys and values as
    transformers' StaticLayer makes them; returns the function that undoes it."""
    from transformers.cache_utils import StaticLayer
    init = StaticLayer.lazy_initialization

    def lazy_initialization(self, *a, **k):
        r = init(self, *a, **k)
        made.extend((tuple(t.shape), t.numel() * t.element_size())
                    for t in (self.keys, self.values))
        return r
    StaticLayer.lazy_initialization = lazy_initialization

    def undo():
        StaticLayer.lazy_initialization = init
    return undo


def _hf_generate_job(cx, model, cfg, dtype, cache, compile_graphs=False):
    """Runs INFER_REQUESTS through model.generate (greedy, exactly new tokens each) and writes
    the truth: per request the KV cache's bytes from the shapes, its span, memory_stats after."""
    import torch
    layers, kv_heads, head_dim = _kv_shape(cfg)
    dsize = torch.empty((), dtype=dtype).element_size()
    cx.truth["model"] = {"layers": layers, "kv_heads": kv_heads, "heads": cfg.num_attention_heads,
                         "head_dim": head_dim, "dtype": str(dtype), "dtype_bytes": dsize,
                         "cache": cache, "weights": weights_truth(model)}
    kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
    if cache == "static":
        kw["cache_implementation"] = "static"
    # the cache's keys and values after each forward, from their shapes (no reference is kept)
    seen = {}
    made = []  # a static cache's keys and values as its layers make them (in the first,
    # uncompiled forward: the compiled ones would not run a hook's Python)
    if cache == "static":
        undo = _static_layers_made(made)
        hook = None
    else:
        undo = None
        hook = _count_forwards(model, seen)
    reqs = []
    with torch.no_grad():
        for i, (b, p, n) in enumerate(INFER_REQUESTS):
            ids = torch.randint(1, cfg.vocab_size, (b, p), device="cuda")
            mask = torch.ones_like(ids)
            t0 = now_us()
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n,
                                 min_new_tokens=n, **kw)
            torch.cuda.synchronize()
            t1 = now_us()
            assert out.shape == (b, p + n), out.shape
            per_token = 2 * layers * b * kv_heads * head_dim * dsize
            # the cache holds the prompt and every new token but the last (which is returned,
            # not fed back): a dynamic one grows to that, a static one is made for at least
            # that many tokens before the first (transformers keeps the longest length asked)
            tokens = p + n - 1
            if cache == "static":
                seen = {"shapes": sorted({sh for sh, _ in made}),
                        "bytes": sum(nb for _, nb in made), "tensors": len(made),
                        "forwards": None}
                made.clear()
            assert seen["tensors"] == 2 * layers, seen
            assert seen["bytes"] % per_token == 0, (seen, per_token)
            if cache == "dynamic":
                assert seen["bytes"] == per_token * tokens, (seen, per_token * tokens)
            reqs.append({"request": i, "batch": b, "prompt_tokens": p, "new_tokens": n,
                         "forwards": seen.pop("forwards"), "kv_tokens": tokens,
                         "kv_bytes_per_token": per_token,
                         "kv_cache_tokens": seen["bytes"] // per_token,
                         "kv_cache_shapes": seen["shapes"], "kv_bytes": seen["bytes"],
                         "start_us": t0, "end_us": t1, "stats_after": stats(0)})
            del out, ids, mask
            cx.truth["steps"] += 1
    if hook is not None:
        hook.remove()
    if undo is not None:
        undo()
    cx.truth["requests"] = reqs
    cx.truth["kv_peak_bytes"] = max(r["kv_bytes"] for r in reqs)
    cx.truth["attn_implementation"] = getattr(model.config, "_attn_implementation", None)
    cx.finish()


def _hf_import():
    try:
        import transformers
    except ImportError:
        print("SKIP: transformers is not installed", flush=True)
        sys.exit(SKIP)
    return transformers


@case("infer_gpt2_dynamic", "generation with transformers GPT2LMHeadModel (4 layers, n_embd 256, "
      "4 heads: MHA, vocab 8192, random weights, fp32), model.generate with its dynamic cache "
      "(greedy, exactly the new tokens asked), three requests (batch x prompt + new tokens: 1x32+48, "
      "2x64+32, 4x16+64); history on from the start, Python stacks")
def c_infer_gpt2_dynamic(cx):
    import torch
    tr = _hf_import()
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cx.truth["transformers"] = tr.__version__
    cx.history(enabled="all", context="all", stacks="python")
    cfg = GPT2Config(vocab_size=8192, n_positions=512, n_embd=256, n_layer=4, n_head=4)
    m = GPT2LMHeadModel(cfg).cuda().eval()
    _hf_generate_job(cx, m, cfg, torch.float32, "dynamic")


def _llama(dtype):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=8192, hidden_size=512, intermediate_size=1376,
                      num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                      max_position_embeddings=512)
    return cfg, LlamaForCausalLM(cfg).to(device="cuda", dtype=dtype).eval()


@case("infer_llama_dynamic", "generation with transformers LlamaForCausalLM (4 layers, hidden 512, "
      "8 heads of which 2 key-value: GQA, vocab 8192, random weights) in bf16 (built on the CPU, "
      "then .to(cuda, bfloat16)), model.generate with its dynamic cache, the three requests of "
      "infer_gpt2_dynamic; history on from the start, Python stacks")
def c_infer_llama_dynamic(cx):
    import torch
    tr = _hf_import()
    cx.truth["transformers"] = tr.__version__
    cx.history(enabled="all", context="all", stacks="python")
    cfg, m = _llama(torch.bfloat16)
    _hf_generate_job(cx, m, cfg, torch.bfloat16, "dynamic")


@case("infer_llama_static", "the bf16 GQA Llama of infer_llama_dynamic generating with "
      "cache_implementation='static' (a cache made at the request's first forward for its "
      "whole length and written in place; transformers compiles the decoding forward and runs "
      "it under CUDA graphs), the same three requests; history on from the start, Python stacks, "
      "compile_context=True")
def c_infer_llama_static(cx):
    import torch
    tr = _hf_import()
    cx.truth["transformers"] = tr.__version__
    cx.history(enabled="all", context="all", stacks="python", compile_context=True)
    cfg, m = _llama(torch.bfloat16)
    _hf_generate_job(cx, m, cfg, torch.bfloat16, "static")


def _paged_decoder(layers, d, heads, kv_heads, vocab, block, dtype):
    """A small decoder in plain PyTorch whose keys and values live in a paged cache: blocks of
    `block` tokens per layer, made as a request's sequence reaches them and released at its end
    (the way vLLM-style servers hold a request's cache, one block table per request)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    hd = d // heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.RMSNorm(d), nn.RMSNorm(d)
            self.q = nn.Linear(d, d, bias=False)
            self.kv = nn.Linear(d, 2 * kv_heads * hd, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.up = nn.Linear(d, 4 * d, bias=False)
            self.down = nn.Linear(4 * d, d, bias=False)

        def forward(self, x, cache, layer, pos):
            b, s, _ = x.shape
            h = self.norm1(x)
            q = self.q(h).view(b, s, heads, hd).transpose(1, 2)
            k, v = self.kv(h).view(b, s, 2, kv_heads, hd).unbind(2)
            cache.write(layer, pos, k, v)
            keys, values = cache.read(layer, pos + s)
            a = F.scaled_dot_product_attention(q, keys, values, is_causal=s > 1, enable_gqa=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
            return x + self.down(F.gelu(self.up(self.norm2(x))))

    class PagedKVCache:
        def __init__(self, batch):
            self.batch = batch
            self.blocks = [[] for _ in range(layers)]  # per layer: [keys, values] per block

        def allocate_kv_blocks(self, layer, tokens):
            while len(self.blocks[layer]) * block < tokens:
                self.blocks[layer].append(
                    torch.empty(2, self.batch, block, kv_heads, hd, device="cuda", dtype=dtype))

        def write(self, layer, pos, k, v):
            self.allocate_kv_blocks(layer, pos + k.shape[1])
            for t in range(k.shape[1]):
                blk = self.blocks[layer][(pos + t) // block]
                blk[0, :, (pos + t) % block] = k[:, t]
                blk[1, :, (pos + t) % block] = v[:, t]

        def read(self, layer, tokens):
            kv = torch.cat(self.blocks[layer], dim=2)[:, :, :tokens]  # gathered for attention
            return kv[0].transpose(1, 2), kv[1].transpose(1, 2)

        def nbytes(self):
            return tensor_bytes(t for bl in self.blocks for t in bl)

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(Block() for _ in range(layers))
            self.norm = nn.RMSNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids, cache, pos):
            x = self.emb(ids)
            for i, l in enumerate(self.layers):
                x = l(x, cache, i, pos)
            return self.head(self.norm(x[:, -1]))

    return Decoder, PagedKVCache


@case("infer_paged", "generation with a small decoder in plain PyTorch (4 layers, d 256, 8 heads "
      "of which 2 key-value: GQA, vocab 8192, fp32) whose keys and values live in a paged cache: "
      "blocks of 16 tokens per layer made as each request reaches them, released at its end; "
      "the three requests of infer_gpt2_dynamic, greedy; history on from the start, Python stacks")
def c_infer_paged(cx):
    import torch
    torch.manual_seed(0)
    layers, d, heads, kv_heads, vocab, block, dtype = 4, 256, 8, 2, 8192, 16, torch.float32
    cx.history(enabled="all", context="all", stacks="python")
    Decoder, PagedKVCache = _paged_decoder(layers, d, heads, kv_heads, vocab, block, dtype)
    m = Decoder().to(device="cuda", dtype=dtype).eval()
    hd = d // heads
    dsize = torch.empty((), dtype=dtype).element_size()
    cx.truth["model"] = {"layers": layers, "kv_heads": kv_heads, "heads": heads, "head_dim": hd,
                         "dtype": str(dtype), "dtype_bytes": dsize, "cache": "paged",
                         "block_tokens": block, "weights": weights_truth(m)}
    reqs = []
    with torch.no_grad():
        for i, (b, p, n) in enumerate(INFER_REQUESTS):
            ids = torch.randint(1, vocab, (b, p), device="cuda")
            t0 = now_us()
            cache = PagedKVCache(b)
            logits = m(ids, cache, 0)
            pos = p
            out = [logits.argmax(-1)]
            for _ in range(n - 1):
                logits = m(out[-1][:, None], cache, pos)
                pos += 1
                out.append(logits.argmax(-1))
            torch.cuda.synchronize()
            held = cache.nbytes()
            del cache, logits
            t1 = now_us()
            per_token = 2 * layers * b * kv_heads * hd * dsize
            tokens = p + n - 1
            blocks = -(-tokens // block)
            assert held == blocks * block * per_token, (held, blocks, per_token)
            reqs.append({"request": i, "batch": b, "prompt_tokens": p, "new_tokens": n,
                         "forwards": n, "kv_tokens": tokens, "kv_blocks_per_layer": blocks,
                         "kv_bytes_per_token": per_token, "kv_bytes": blocks * block * per_token,
                         "kv_bytes_measured": held, "start_us": t0, "end_us": t1,
                         "stats_after": stats(0)})
            del out, ids
            cx.truth["steps"] += 1
    cx.truth["requests"] = reqs
    cx.truth["kv_peak_bytes"] = max(r["kv_bytes"] for r in reqs)
    cx.finish()


EVAL_REQUESTS = [(2, 32, 24), (1, 48, 16)]  # (batch, prompt tokens, new tokens)


@case("train_eval", "a training job with evaluation loops: transformers GPT2LMHeadModel (4 layers, "
      "n_embd 256, 4 heads, vocab 8192, fp32), AdamW; two rounds of 4 training steps (batch "
      "4 x 128) each followed by an evaluation under torch.no_grad: 2 validation batches (4 x 128, "
      "use_cache=False) and two model.generate requests with the dynamic cache (1: batch 2, 32 + "
      "24 new tokens; 2: batch 1, 48 + 16); history on from the start, Python stacks. The truth "
      "holds the parameter, gradient and optimizer-state bytes and, for each evaluation, its "
      "span, its forwards and each request's KV cache from the cache's shapes")
def c_train_eval(cx):
    import torch
    tr = _hf_import()
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cx.truth["transformers"] = tr.__version__
    cx.history(enabled="all", context="all", stacks="python")
    cfg = GPT2Config(vocab_size=8192, n_positions=512, n_embd=256, n_layer=4, n_head=4)
    m = GPT2LMHeadModel(cfg).cuda()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    layers, kv_heads, head_dim = _kv_shape(cfg)
    seen = {}
    hook = _count_forwards(m, seen)
    loops, grad_bytes, grad_tensors = [], 0, 0
    kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
    for rnd in range(2):
        m.train()
        for i in range(4):
            ids = torch.randint(0, cfg.vocab_size, (4, 128), device="cuda")
            out = m(input_ids=ids, labels=ids)
            out.loss.backward()
            gs = [p.grad for p in m.parameters() if p.grad is not None]
            grad_bytes, grad_tensors = tensor_bytes(gs), len(gs)
            del gs
            opt.step()
            opt.zero_grad(set_to_none=True)
            out.loss.item()
            del out, ids
            cx.truth["steps"] += 1
        m.eval()
        seen.clear()
        t0 = now_us()
        reqs = []
        with torch.no_grad():
            for v in range(2):
                ids = torch.randint(0, cfg.vocab_size, (4, 128), device="cuda")
                out = m(input_ids=ids, labels=ids, use_cache=False)
                out.loss.item()
                del out, ids
            val_forwards = seen.get("forwards", 0)
            for i, (b, p, n) in enumerate(EVAL_REQUESTS):
                seen.clear()
                ids = torch.randint(1, cfg.vocab_size, (b, p), device="cuda")
                mask = torch.ones_like(ids)
                r0 = now_us()
                out = m.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n,
                                 min_new_tokens=n, **kw)
                torch.cuda.synchronize()
                r1 = now_us()
                assert out.shape == (b, p + n), out.shape
                per_token = 2 * layers * b * kv_heads * head_dim * 4
                tokens = p + n - 1
                assert seen["bytes"] == per_token * tokens, (seen, per_token * tokens)
                reqs.append({"request": i, "batch": b, "prompt_tokens": p, "new_tokens": n,
                             "forwards": seen["forwards"], "kv_tokens": tokens,
                             "kv_bytes_per_token": per_token, "kv_bytes": seen["bytes"],
                             "start_us": r0, "end_us": r1})
                del out, ids, mask
        torch.cuda.synchronize()
        loops.append({"round": rnd, "start_us": t0, "end_us": now_us(),
                      "validation_forwards": val_forwards,
                      "forwards": val_forwards + sum(r["forwards"] for r in reqs),
                      "requests": reqs, "kv_peak_bytes": max(r["kv_bytes"] for r in reqs)})
    hook.remove()
    model_truth(cx, m, opt, [])
    cx.truth["model"].update({"gradient_tensors": grad_tensors, "gradient_bytes": grad_bytes,
                              "weights": weights_truth(m)})
    cx.truth["eval_loops"] = loops
    cx.finish()


STATIC_KEPT_REQUESTS = [(2, 32, 32), (2, 64, 24), (2, 16, 48)]


@case("infer_static_kept", "the bf16 GQA Llama of infer_llama_dynamic serving three requests "
      "(batch 2: 32 + 32 new tokens, 64 + 24, 16 + 48) through one transformers StaticCache made "
      "for 128 tokens before the first and kept across all three (cache.reset() between), eager "
      "(generate's disable_compile=True); history on from the start, Python stacks. The truth "
      "holds the weights, the cache's bytes as its layers made them, and each request's span and "
      "forwards")
def c_infer_static_kept(cx):
    import torch
    tr = _hf_import()
    from transformers import StaticCache
    cx.truth["transformers"] = tr.__version__
    cx.history(enabled="all", context="all", stacks="python")
    cfg, m = _llama(torch.bfloat16)
    layers, kv_heads, head_dim = _kv_shape(cfg)
    made = []
    undo = _static_layers_made(made)
    try:
        cache = StaticCache(config=cfg, max_cache_len=128)
    except TypeError:
        cache = StaticCache(config=cfg, max_batch_size=2, max_cache_len=128, device="cuda",
                            dtype=torch.bfloat16)
    seen = {}
    hook = _count_forwards(m, seen)
    kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None, disable_compile=True)
    reqs = []
    with torch.no_grad():
        for i, (b, p, n) in enumerate(STATIC_KEPT_REQUESTS):
            seen.clear()
            ids = torch.randint(1, cfg.vocab_size, (b, p), device="cuda")
            mask = torch.ones_like(ids)
            t0 = now_us()
            out = m.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n,
                             min_new_tokens=n, past_key_values=cache, **kw)
            torch.cuda.synchronize()
            t1 = now_us()
            assert out.shape == (b, p + n), out.shape
            reqs.append({"request": i, "batch": b, "prompt_tokens": p, "new_tokens": n,
                         "forwards": seen.get("forwards"), "kv_tokens": p + n - 1,
                         "kv_bytes_per_token": 2 * layers * b * kv_heads * head_dim * 2,
                         "start_us": t0, "end_us": t1})
            cache.reset()
            del out, ids, mask
            cx.truth["steps"] += 1
    hook.remove()
    undo()
    assert len(made) == 2 * layers, made
    kv = sum(nb for _, nb in made)
    for r in reqs:
        r["kv_bytes"] = kv  # the one cache, made for 128 tokens, holds every request
    cx.truth["model"] = {"layers": layers, "kv_heads": kv_heads, "heads": cfg.num_attention_heads,
                         "head_dim": head_dim, "dtype": "torch.bfloat16", "dtype_bytes": 2,
                         "cache": "static_kept", "cache_tokens": 128,
                         "kv_cache_shapes": sorted({sh for sh, _ in made}),
                         "weights": weights_truth(m)}
    cx.truth["requests"] = reqs
    cx.truth["kv_peak_bytes"] = kv
    del cache
    cx.finish()


for _name in ("graph_pools", "compile_reduce_overhead", "mempool", "graph_step_adam",
              "decode_graphs", "mempool_custom_allocator"):
    _c = CASES[_name]
    case(_name + "_expandable", _c["what"] + ", with PYTORCH_CUDA_ALLOC_CONF="
         "'expandable_segments:True'", env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
         timeout=_c["timeout"])(_c["fn"])

ORDER = ["ring_wrap", "late_history", "late_after_empty_cache", "state_only", "no_history",
         "bare_list", "no_traces", "oom_outside", "oom_fraction", "ddp_gloo", "hf_gpt2",
         "lightning", "timm", "stacks_all", "fsdp2", "hf_gpt2_long", "graph_pools",
         "compile_reduce_overhead", "mempool", "graph_step_adam", "graphed_callables",
         "decode_graphs", "mempool_on_oom", "mempool_on_oom_fixed", "mempool_on_oom_roomy",
         "mempool_scope_blocks_retry", "graph_capture_blocks_retry",
         "mempool_scope_blocks_retry_gc", "graph_capture_blocks_retry_gc",
         "graph_capture_record_stream", "graph_capture_record_stream_reuse",
         "graph_capture_empty_cache", "graph_capture_begin_empty_cache", "mempool_no_split",
         "graph_pools_expandable", "mempool_custom_allocator", "mempool_custom_allocator_expandable",
         "compile_reduce_overhead_expandable", "mempool_expandable", "graph_step_adam_expandable",
         "decode_graphs_expandable", "explain_adamw", "explain_sgd", "explain_leak",
         "explain_hf_gpt2", "explain_lightning", "explain_profiler", "explain_metadata", "explain_scopes", "explain_copies", "explain_llama",
         "explain_empty_cache", "explain_frag_oom", "explain_frag_oom_expandable",
         "infer_gpt2_dynamic", "infer_llama_dynamic", "infer_llama_static", "infer_paged", "train_eval", "infer_static_kept"] + list(SETTINGS)
assert sorted(ORDER) == sorted(CASES)


# ---------------------------------------------------------------------------------------------
# driver

def env_info(out):
    import torch
    info = {"torch": torch.__version__, "cuda_runtime": torch.version.cuda,
            "python": sys.version.split()[0], "device_count": torch.cuda.device_count(),
            "devices": [{"name": torch.cuda.get_device_name(d),
                         "total_memory": torch.cuda.get_device_properties(d).total_memory}
                        for d in range(torch.cuda.device_count())],
            "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}
    try:
        info["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        info["nvidia_smi"] = repr(e)
    sigs = {}
    for n in ("_record_memory_history", "_snapshot", "_dump_snapshot", "memory_snapshot"):
        f = getattr(torch.cuda.memory, n, None)
        try:
            sigs[n] = str(inspect.signature(f))
        except Exception as e:  # noqa: BLE001
            sigs[n] = repr(e)
    sigs["torch._C._cuda_memorySnapshot.__doc__"] = getattr(torch._C, "_cuda_memorySnapshot").__doc__
    info["signatures"] = sigs
    for mod in ("transformers", "timm", "pytorch_lightning", "lightning", "cupy", "torchvision"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception as e:  # noqa: BLE001
            info[mod] = "not available: " + type(e).__name__
    with open(os.path.join(out, "env.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info, indent=1), flush=True)


def run_case(name, out):
    c = CASES[name]
    cx = None
    try:
        if name == "ddp_gloo":
            class Light:
                pass
            cx = Light()
            cx.out = out
        else:
            cx = Ctx(name, out, c["what"])
        c["fn"](cx)
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", help="case names, or 'all'")
    ap.add_argument("--out", default="snapshots-out")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--memsnap", metavar="BIN",
                    help="also record each case with `BIN record --stacks STACKS` in the same "
                         "process, into DIR/NAME.zst: the events PyTorch's trace tracker saw, "
                         "each with its pool")
    ap.add_argument("--record-stacks", choices=("python", "none"),
                    default=os.environ.get("MEMSNAP_RECORD_STACKS", "python"),
                    help="the stacks `BIN record` takes (default python; MEMSNAP_RECORD_STACKS)")
    ap.add_argument("--deadline", type=float, default=540,
                    help="seconds after which no further case is started (default 540)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--env-info", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ddp-rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.list:
        for n in ORDER:
            print(f"{n:24s} {CASES[n]['what']}")
        return 0
    os.makedirs(a.out, exist_ok=True)
    if a.env_info:
        env_info(a.out)
        return 0
    if a.ddp_rank is not None:
        try:
            ddp_rank(a.ddp_rank, 2, a.port, a.out, CASES["ddp_gloo"]["what"])
        except BaseException:
            traceback.print_exc()
            return 1
        return 0
    if a.child:
        run_case(a.child, a.out)
        return 0
    names = ORDER if "all" in a.cases else a.cases
    bad = [n for n in names if n not in CASES]
    if bad or not names:
        ap.error(f"unknown case(s) {bad}; known: {', '.join(ORDER)}" if bad else "no case named")
    t0 = time.time()
    log = []
    subprocess.run([sys.executable, HERE, "--env-info", "--out", a.out], timeout=120)
    for n in names:
        c = CASES[n]
        if time.time() - t0 > a.deadline:
            log.append({"case": n, "status": "not started (deadline)"})
            print("NOT STARTED (deadline)", n, flush=True)
            continue
        tries = [c["env"]] + ([dict(c["env"], **c["fallback_env"])] if c["fallback_env"] else [])
        for env in tries:
            t1 = time.time()
            logpath = os.path.join(a.out, n + ".log")
            print(f"=== {n} {env or ''}", flush=True)
            with open(logpath, "a") as lf:
                try:
                    cmd = [sys.executable, HERE, "--child", n, "--out", a.out]
                    if a.memsnap:
                        cmd = [a.memsnap, "record", "-o", os.path.join(a.out, n + ".zst"),
                               "--stacks", a.record_stacks, "--"] + cmd
                    r = subprocess.run(cmd,
                                       env=dict(os.environ, PYTHONUNBUFFERED="1", **env),
                                       stdout=lf, stderr=subprocess.STDOUT, timeout=c["timeout"])
                    rc = r.returncode
                except subprocess.TimeoutExpired:
                    rc = "timeout"
            status = "ok" if rc == 0 else "skipped" if rc == SKIP else "failed"
            with open(logpath) as lf:
                tail = lf.read().splitlines()[-25:]
            print("\n".join(tail), flush=True)
            log.append({"case": n, "env": env, "rc": rc, "status": status,
                        "seconds": round(time.time() - t1, 1),
                        "outputs": c["outputs"], "log_tail": tail[-12:]})
            print(f"=== {n}: {status} (rc {rc}, {time.time() - t1:.1f} s)", flush=True)
            if status != "failed":
                break
    with open(os.path.join(a.out, "run_log.json"), "w") as f:
        json.dump({"seconds": round(time.time() - t0, 1), "cases": log}, f, indent=1)
    return 0 if all(x.get("status") in ("ok", "skipped") for x in log) else 1


if __name__ == "__main__":
    sys.exit(main())
