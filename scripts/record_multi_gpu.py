#!/usr/bin/env python3
"""Ground truth for jobs that use two GPUs: each process's snapshot, memsnap's own trace of the same
run, and what PyTorch reported, for every device the process touched.

    python3 scripts/record_multi_gpu.py --out DIR --memsnap BIN [JOB...]
        # JOB: ddp fsdp2 pipeline oom_rank1 late_wrap (default: all, in that order)

Needs two CUDA GPUs, PyTorch and NCCL. Nothing is downloaded; every model is record_snapshots.py's
GPT (vocab 16000) with random weights, seeds fixed, bf16 autocast without its cache. NVLink
multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1)
in every process.

Each process runs as `BIN record -o DIR/TAG.zst -- python3 THIS --child JOB ...`, records PyTorch's
history from its start (late_wrap: after 2 steps, into a small ring), and dumps DIR/TAG.pickle with
torch.cuda.memory._dump_snapshot at its end, or in its `except OutOfMemoryError` handler, or (rank
0 of oom_rank1) when its step's GPU work has not completed after a while because the other rank
is gone. DIR/TAG.truth.json holds, for every device the process used, the full
torch.cuda.memory_stats and mem_get_info at the end (and at the OOM or the hang), the OOM message,
the steps run with their per-device peaks, and what the model holds per device: parameters,
gradients (as the last optimizer step saw them) and the optimizer's state, counted from the
tensors themselves (a DTensor's local shard).

Jobs (tags):
    ddp        DDP over NCCL, rank r on cuda:r, 4 steps (ddp_rank0, ddp_rank1)
    fsdp2      FSDP2 (fully_shard on each block and the root) over NCCL, 4 steps
               (fsdp2_rank0, fsdp2_rank1)
    pipeline   one process: the first half of the blocks on cuda:0, the rest and the head on
               cuda:1, activations moved between, AdamW, 4 steps (pipeline)
    oom_rank1  the ddp job, rank 1 under a per-process limit that its step-3 batch does not fit
               (the limit from ddp_rank1's peaks, or a fallback); rank 0 is left waiting on the
               other rank: it dumps if its step's GPU work has not completed after 15 s, but if
               it blocks on the CPU first (as in the run of 2026-11-28: in step 3's backward) it
               is killed after the timeout and the driver writes its truth, with no stats and no
               snapshot (oom_rank1_rank0, oom_rank1_rank1)
    late_wrap  one process on cuda:0, history turned on after 2 steps with max_entries 3000, 6
               steps: the ring wraps (late_wrap)
"""
import argparse
import gc
import json
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
GiB = 1 << 30
MiB = 1 << 20
VOCAB = 16000
NCCL_ENV = dict(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
                NVSHMEM_DISABLE_NVLS="1")
HISTORY = dict(enabled="all", context="all", stacks="python")
LATE_MAX_ENTRIES = 3000
LATE_AFTER = 2

JOBS = {
    "ddp": dict(ranks=2, model=dict(d=768, layers=6, heads=12), shapes=[(4, 512)] * 4,
                what="DDP over NCCL, 2 ranks, rank r on cuda:r; GPT (d=768, 6 layers, vocab "
                     "16000), AdamW, bf16 autocast, 4 steps of 4x512; history on from the start"),
    "fsdp2": dict(ranks=2, model=dict(d=768, layers=6, heads=12), shapes=[(4, 512)] * 4,
                  what="FSDP2 (torch.distributed.fsdp.fully_shard on each block, then the root) "
                       "over NCCL, 2 ranks, rank r on cuda:r; GPT (d=768, 6 layers, vocab 16000), "
                       "AdamW, bf16 autocast, 4 steps of 4x512; parameters, gradients and optimizer "
                       "state are DTensor shards; history on from the start"),
    "pipeline": dict(ranks=0, model=dict(d=768, layers=6, heads=12), shapes=[(8, 512)] * 4,
                     what="one process, naive pipeline: GPT (d=768, 6 layers, vocab 16000) built on "
                          "cuda:0, then blocks 3-5 and the head moved to cuda:1; the embedding and "
                          "blocks 0-2 stay on cuda:0; activations moved with .to() between; loss "
                          "on cuda:1; AdamW, bf16 autocast, 4 steps of 8x512; history on from the "
                          "start (so the moved parameters' first allocations on cuda:0 are in it)"),
    "oom_rank1": dict(ranks=2, model=dict(d=768, layers=6, heads=12),
                      shapes=[(4, 512), (4, 512), (48, 512), (4, 512)],
                      what="the ddp job with a batch of 48x512 in step 3; rank 1 under a "
                           "per-process limit (set_per_process_memory_fraction) that steps 1-2 "
                           "fit and step 3 does not: rank 1 dies in step 3 and dumps in its OOM "
                           "handler; rank 0 waits on the all-reduce of step 3, dumps when that "
                           "step's GPU work has not completed within the hang timeout, and is "
                           "killed if still alive"),
    "late_wrap": dict(ranks=0, model=dict(d=512, layers=4, heads=8),
                      shapes=[(4, 256), (8, 512), (4, 512), (8, 256), (2, 1024), (8, 512)],
                      what="one process on cuda:0; GPT (d=512, 4 layers, vocab 16000), AdamW, bf16 "
                           "autocast, 6 steps of varied shapes; history turned on after step 2 "
                           "with max_entries=3000: the ring wraps, the pickle holds the last 3000 "
                           "events while memsnap's trace holds the whole run"),
}
ORDER = ["ddp", "fsdp2", "pipeline", "oom_rank1", "late_wrap"]


# ---------------------------------------------------------------------------------------------
# inside a job's process

def full_stats(d):
    import torch
    return dict(torch.cuda.memory_stats(d))


def mem_info(d):
    from record_snapshots import mem_info as read
    return read(d)


def by_device(devs, with_mem_info=True):
    out = {}
    for d in devs:
        out[str(d)] = {"memory_stats": full_stats(d)}
    if with_mem_info:
        for d in devs:
            out[str(d)]["mem_get_info"] = mem_info(d)
    return out


def local(t):
    """A DTensor's local shard, else the tensor."""
    return t.to_local() if hasattr(t, "to_local") else t


def count_by_device(ts):
    """{device: {"tensors": n, "bytes": b}} over CUDA tensors (DTensors by their local shard)."""
    out = {}
    for t in ts:
        t = local(t)
        if not t.is_cuda:
            continue
        e = out.setdefault(str(t.device.index), {"tensors": 0, "bytes": 0})
        e["tensors"] += 1
        e["bytes"] += t.numel() * t.element_size()
    return dict(sorted(out.items()))


def model_truth(model, opt, grads):
    import torch
    state = [t for st in opt.state.values() for t in st.values() if torch.is_tensor(t)]
    cpu_state = [t for t in state if not local(t).is_cuda]
    m = {
        "parameters_by_device": count_by_device(model.parameters()),
        "gradients_by_device": grads,
        "gradients_note": "the .grad tensors after the last completed backward, as the optimizer "
                          "step saw them (zero_grad(set_to_none=True) frees them afterwards)",
        "optimizer": type(opt).__name__,
        "optimizer_state_by_device": count_by_device(state),
        "optimizer_state_cpu_tensors": len(cpu_state),
        "optimizer_state_cpu_bytes": sum(local(t).numel() * local(t).element_size()
                                         for t in cpu_state),
        "buffers_by_device": count_by_device(model.buffers()),
    }
    for k in ("parameters", "gradients", "optimizer_state"):
        m[k + "_bytes_total"] = sum(v["bytes"] for v in m[k + "_by_device"].values())
    return m


def snapshot_summary(path):
    with open(path, "rb") as f:
        obj = pickle.load(f)
    segs = obj.get("segments", [])
    traces = obj.get("device_traces", [])
    out = {"file": os.path.basename(path), "pickle_bytes": os.path.getsize(path),
           "keys": sorted(obj.keys()), "device_traces_lists": len(traces), "by_device": {}}
    devs = sorted({s.get("device") for s in segs} | {i for i, t in enumerate(traces) if t})
    for d in devs:
        ss = [s for s in segs if s.get("device") == d]
        tr = traces[d] if d < len(traces) else []
        acts = {}
        for e in tr:
            acts[e.get("action")] = acts.get(e.get("action"), 0) + 1
        out["by_device"][str(d)] = {
            "segments": len(ss), "segments_bytes": sum(s.get("total_size", 0) for s in ss),
            "blocks": sum(len(s.get("blocks", [])) for s in ss),
            "trace_entries": len(tr), "actions": acts,
            "oom_entry_index": next((k for k, e in enumerate(tr) if e.get("action") == "oom"),
                                    None),
            "first_actions": [e.get("action") for e in tr[:6]],
        }
    return out


def wait_gpu(devs, timeout):
    """Waits, by polling events (no blocking CUDA call), for each device's current stream to
    finish what was queued; False if it has not after timeout seconds."""
    import torch
    evs = []
    for d in devs:
        e = torch.cuda.Event()
        e.record(torch.cuda.current_stream(d))
        evs.append(e)
    t0 = time.time()
    while not all(e.query() for e in evs):
        if time.time() - t0 > timeout:
            return False
        time.sleep(0.002)
    return True


class Job:
    def __init__(self, a):
        import torch
        self.a = a
        spec = JOBS[a.child]
        self.spec = spec
        self.t0 = time.time()
        self.path = os.path.join(a.out, a.tag + ".pickle")
        nd = torch.cuda.device_count()
        self.truth = {
            "job": a.child, "tag": a.tag, "what": spec["what"],
            "torch": torch.__version__, "cuda_runtime": torch.version.cuda,
            "nccl": str(torch.cuda.nccl.version()) if spec["ranks"] else None,
            "python": sys.version.split()[0], "device_count": nd,
            "devices": [{"index": d, "name": torch.cuda.get_device_name(d),
                         "total_memory": torch.cuda.get_device_properties(d).total_memory}
                        for d in range(nd)],
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
            "env": {k: os.environ.get(k) for k in NCCL_ENV},
            "pid": os.getpid(),
            "recorded_under": f"memsnap record -o {a.tag}.zst -- python3 "
                              f"scripts/record_multi_gpu.py --child {a.child} ...",
            "trace": a.tag + ".zst",
            "rank": a.rank if spec["ranks"] else None,
            "world_size": spec["ranks"] or None,
            "backend": "nccl" if spec["ranks"] else None,
            "devices_used": None, "model_config": dict(spec["model"], vocab=VOCAB),
            "shapes": spec["shapes"], "steps_planned": len(spec["shapes"]),
            "steps_completed": 0, "finished": False,
            "history": None, "limit_bytes": None, "fraction": None, "limit_device": None,
            "oom": None, "died_in_step": None, "died_in_phase": None, "at_oom": None,
            "hang": None, "step_peaks": [], "losses": [],
        }

    def write(self):
        self.truth["seconds"] = round(time.time() - self.t0, 2)
        with open(os.path.join(self.a.out, self.a.tag + ".truth.json"), "w") as f:
            json.dump(self.truth, f, indent=1)

    def history(self, **kw):
        import torch
        torch.cuda.memory._record_memory_history(**HISTORY, **kw)
        h = dict(HISTORY, **kw)
        h["max_entries"] = kw.get("max_entries", "default (sys.maxsize)")
        h["turned_on_after_steps"] = self.truth["steps_completed"]
        self.truth["history"] = h

    def dump(self, how):
        import torch
        torch.cuda.memory._dump_snapshot(self.path)
        self.truth["snapshot_written_by"] = how
        self.truth["snapshot"] = snapshot_summary(self.path)


def make_model(spec, devs, rank):
    import torch
    from record_snapshots import gpt
    torch.manual_seed(0)  # the same initial weights on every rank
    m = gpt(d=spec["model"]["d"], layers=spec["model"]["layers"], vocab=VOCAB,
            heads=spec["model"]["heads"])
    return m


def pipeline_setup(m):
    """Blocks of the second half and the head to cuda:1; a forward that moves activations."""
    import torch
    import torch.nn as nn
    half = len(m.blocks) // 2
    for b in m.blocks[half:]:
        b.to("cuda:1")
    m.head.to("cuda:1")

    def forward(x):
        h = m.emb(x)
        masks = {}
        for b in m.blocks:
            dev = b.linear1.weight.device
            if h.device != dev:
                h = h.to(dev)
            if dev not in masks:
                masks[dev] = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=dev)
            h = b(h, src_mask=masks[dev], is_causal=True)
        return m.head(h.to(m.head.weight.device))
    return forward, {"cuda:0": ["emb"] + [f"blocks.{i}" for i in range(half)],
                     "cuda:1": [f"blocks.{i}" for i in range(half, len(m.blocks))] + ["head"]}


def run_job(a):
    import torch
    import torch.nn.functional as F
    spec = JOBS[a.child]
    ranks = spec["ranks"]
    dev = a.rank if ranks else 0
    devs = [0, 1] if a.child == "pipeline" else [dev]
    torch.cuda.set_device(dev)
    torch.cuda.init()
    job = Job(a)
    T = job.truth
    T["devices_used"] = devs
    if a.limit:
        total = torch.cuda.get_device_properties(dev).total_memory
        f = a.limit / total
        torch.cuda.set_per_process_memory_fraction(f, dev)
        T.update(limit_bytes=a.limit, fraction=f, limit_device=dev,
                 limit_how=f"torch.cuda.set_per_process_memory_fraction({f!r}, {dev}) at the start")
        if a.limit_note:
            T["limit_note"] = a.limit_note
    if a.child != "late_wrap":
        job.history()
    if ranks:
        import torch.distributed as dist
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port), RANK=str(a.rank),
                          WORLD_SIZE=str(ranks))
        dist.init_process_group("nccl", rank=a.rank, world_size=ranks,
                                device_id=torch.device("cuda", dev))
    model = make_model(spec, devs, a.rank)
    fwd = model
    if a.child in ("ddp", "oom_rank1"):
        from torch.nn.parallel import DistributedDataParallel as DDP
        fwd = DDP(model, device_ids=[dev])
        T["wrapper"] = "torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])"
    elif a.child == "fsdp2":
        from torch.distributed.fsdp import fully_shard
        for blk in model.blocks:
            fully_shard(blk)
        fully_shard(model)
        fwd = model
        T["wrapper"] = "fully_shard(block) for each block, then fully_shard(model)"
    elif a.child == "pipeline":
        fwd, placement = pipeline_setup(model)
        T["placement"] = placement
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    T["optimizer_how"] = "torch.optim.AdamW(model.parameters(), lr=1e-4) (defaults: foreach)"
    g = torch.Generator(device=f"cuda:{dev}")
    g.manual_seed(1 + (a.rank or 0))
    hang_timeout = 15 if a.child == "oom_rank1" else 120
    T["hang_timeout_s"] = hang_timeout
    out_dev = 1 if a.child == "pipeline" else dev
    grads = {}
    before = None
    phase = None
    try:
        for i, (b, s) in enumerate(spec["shapes"]):
            if a.child == "late_wrap" and i == LATE_AFTER:
                torch.cuda.synchronize(dev)
                before = by_device(devs)
                T["before_history"] = {"by_device": before, "steps_completed": i,
                                       "note": "stats at the moment history was turned on; the "
                                               "model, its optimizer state and the cached "
                                               "segments already exist"}
                job.history(max_entries=LATE_MAX_ENTRIES)
            for d in devs:
                torch.cuda.reset_peak_memory_stats(d)
            phase = "forward"
            x = torch.randint(0, VOCAB, (b, s), device=f"cuda:{dev}", generator=g)
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                logits = fwd(x)
                y = x.to(f"cuda:{out_dev}")
                loss = F.cross_entropy(logits.float().view(-1, VOCAB), y.view(-1))
            phase = "backward"
            loss.backward()
            phase = "optimizer"
            grads = count_by_device(p.grad for p in model.parameters() if p.grad is not None)
            opt.step()
            phase = "waiting for the step's GPU work"
            if not wait_gpu(devs, hang_timeout):
                hang(job, devs, i + 1, grads, model, opt)  # does not return
            opt.zero_grad(set_to_none=True)
            T["losses"].append(loss.item())
            del x, y, logits, loss
            phase = None
            T["step_peaks"].append({"step": i + 1, "shape": [b, s], "by_device": {
                str(d): {k: torch.cuda.memory_stats(d)[k] for k in
                         ("allocated_bytes.all.peak", "reserved_bytes.all.peak",
                          "requested_bytes.all.peak", "active_bytes.all.peak")}
                for d in devs}})
            T["steps_completed"] = i + 1
        T["finished"] = True
    except torch.cuda.OutOfMemoryError as e:
        T.update(oom=str(e), died_in_step=T["steps_completed"] + 1, died_in_phase=phase)
        T["at_oom"] = {"by_device": by_device(devs), "steps_completed": T["steps_completed"]}
        job.dump("torch.cuda.memory._dump_snapshot in the except OutOfMemoryError handler")
    T["model"] = model_truth(model, opt, grads)
    if a.child in ("ddp", "oom_rank1"):
        try:
            ld = fwd._get_ddp_logging_data()
            T["ddp_logging"] = {k: ld[k] for k in ("bucket_sizes", "gradient_as_bucket_view",
                                                   "bucket_cap_bytes", "num_parameter_tensors",
                                                   "total_parameter_size_bytes") if k in ld}
        except Exception as ex:  # noqa: BLE001
            T["ddp_logging"] = repr(ex)
    gc.collect()
    if T["finished"]:
        for d in devs:
            torch.cuda.synchronize(d)
        job.dump("torch.cuda.memory._dump_snapshot at the end of the run")
    T["end"] = {"by_device": by_device(devs),
                "note": "after the last step's zero_grad (or after the OOM handler), gc.collect(), "
                        "and the snapshot's dump; the model and the optimizer are still alive"}
    T["memory_stats_all_devices_at_end"] = {str(d): {k: full_stats(d).get(k) for k in (
        "segment.all.current", "segment.all.allocated", "num_device_alloc",
        "reserved_bytes.all.peak")} for d in range(torch.cuda.device_count())}
    T["devices_with_pytorch_segments"] = [
        d for d in range(torch.cuda.device_count())
        if full_stats(d).get("segment.all.allocated", 0) > 0]
    if before is not None:
        st0, st1 = before[str(dev)]["memory_stats"], T["end"]["by_device"][str(dev)]["memory_stats"]

        def dl(k):
            return st1.get(k, 0) - st0.get(k, 0)
        est = (dl("allocation.all.allocated") + 2 * dl("allocation.all.freed")
               + dl("segment.all.allocated") + dl("segment.all.freed") + dl("num_ooms"))
        T["events_since_history_estimate"] = {
            "value": est, "max_entries": LATE_MAX_ENTRIES, "wrapped": est > LATE_MAX_ENTRIES,
            "formula": "differences from before_history to end of allocation.all.allocated + "
                       "2*allocation.all.freed + segment.all.allocated + segment.all.freed + "
                       "num_ooms"}
    job.write()
    print("RESULT", a.tag, json.dumps({k: T[k] for k in ("finished", "steps_completed", "oom",
                                                        "died_in_step", "seconds")}), flush=True)
    if ranks:
        import torch.distributed as dist
        if T["finished"]:
            dist.barrier(device_ids=[dev])
            dist.destroy_process_group()
        else:
            # the other rank is waiting in an all-reduce: no barrier; leave without waiting on
            # NCCL's teardown if it hangs
            tm = threading.Timer(20, lambda: os._exit(0))
            tm.daemon = True
            tm.start()
            try:
                dist.destroy_process_group()
            except Exception:  # noqa: BLE001
                traceback.print_exc()


def hang(job, devs, step, grads, model, opt):
    """The step's GPU work did not complete (the other rank is gone): record and leave."""
    T = job.truth
    T["hang"] = {"step": step, "seconds_waited": T["hang_timeout_s"],
                 "what": f"the GPU work of step {step} (forward, backward with DDP's all-reduces, "
                         f"optimizer) had not completed after {T['hang_timeout_s']} s: the "
                         f"all-reduce waits for a rank that is gone",
                 "by_device": by_device(devs, with_mem_info=False)}
    T["died_in_step"] = step
    T["died_in_phase"] = "all-reduce wait (hang)"
    T["model"] = model_truth(model, opt, grads)
    job.dump("torch.cuda.memory._dump_snapshot when the step's GPU work had not completed after "
             "the hang timeout (the other rank was gone)")
    job.write()
    for d in devs:
        T["hang"]["by_device"][str(d)]["mem_get_info"] = mem_info(d)
    job.write()
    print("RESULT", job.a.tag, "hang in step", step, flush=True)
    sys.stdout.flush()
    os._exit(0)


# ---------------------------------------------------------------------------------------------
# driver

def child_env():
    env = dict(os.environ, PYTHONUNBUFFERED="1", **NCCL_ENV)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    return env


def child_cmd(a, job, tag, rank=0, port=0, limit=0, note=""):
    cmd = [sys.executable, HERE, "--child", job, "--tag", tag, "--out", a.out, "--rank",
           str(rank), "--port", str(port), "--limit", str(limit), "--limit-note", note]
    if a.memsnap:
        cmd = [a.memsnap, "record", "-o", os.path.join(a.out, tag + ".zst"), "--"] + cmd
    return cmd


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(a, job, limits=None, notes=None, wait_first=None, timeout=150):
    """Starts the job's ranks (each in a session of its own) and waits; returns their exit codes.
    wait_first: the rank whose end is waited for first; the others then get 60 s more."""
    port = free_port()
    procs = []
    for r in range(JOBS[job]["ranks"]):
        tag = f"{job}_rank{r}"
        cmd = child_cmd(a, job, tag, r, port, (limits or {}).get(r, 0), (notes or {}).get(r, ""))
        procs.append(subprocess.Popen(cmd, env=child_env(),
                                      stdout=open(os.path.join(a.out, tag + ".log"), "w"),
                                      stderr=subprocess.STDOUT, start_new_session=True))
    t0 = time.time()
    order = ([procs[wait_first]] if wait_first is not None else []) + procs
    for k, p in enumerate(order):
        left = timeout - (time.time() - t0)
        if k > 0 and wait_first is not None:
            left = max(left, 60)
        try:
            p.wait(timeout=max(left, 1))
        except subprocess.TimeoutExpired:
            pass
    rcs = []
    for r, p in enumerate(procs):
        if p.poll() is None:
            print(f"killing {job}_rank{r} (pid {p.pid}) after the timeout", flush=True)
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rcs.append("killed")
        else:
            rcs.append(p.returncode)
    return rcs


def run_one(a, job, timeout=150):
    tag = job
    with open(os.path.join(a.out, tag + ".log"), "w") as lf:
        try:
            return [subprocess.run(child_cmd(a, job, tag), env=child_env(), stdout=lf,
                                   stderr=subprocess.STDOUT, timeout=timeout).returncode]
        except subprocess.TimeoutExpired:
            return ["timeout"]


def oom_limit(a):
    """Rank 1's limit: its ddp run's largest reserved peak (4x512 steps) plus 1 GiB, rounded to
    2 MiB: steps 1-2 fit, step 3 (48x512) needs several GiB more."""
    p = os.path.join(a.out, "ddp_rank1.truth.json")
    try:
        t = json.load(open(p))
        peak = max(s["by_device"]["1"]["reserved_bytes.all.peak"] for s in t["step_peaks"])
        return (peak + GiB) // (2 * MiB) * (2 * MiB), \
            f"ddp_rank1's largest per-step reserved peak ({peak} bytes) + 1 GiB, rounded to 2 MiB"
    except Exception as e:  # noqa: BLE001
        return 3 * GiB, f"fallback 3 GiB (ddp_rank1's peaks not read: {e!r})"


def note_rc(a, job, tag, rc, devices, waited=None):
    """Adds the exit to the process's truth; for a process that left none (killed, crashed),
    writes one from what the driver knows: no stats, no snapshot."""
    p = os.path.join(a.out, tag + ".truth.json")
    if not os.path.exists(p):
        print("NO TRUTH", tag, rc, flush=True)
        try:
            tail = open(os.path.join(a.out, tag + ".log")).read().splitlines()[-20:]
        except OSError:
            tail = []
        print("\n".join(tail), flush=True)
        t = {"job": job, "tag": tag, "what": JOBS[job]["what"], "exit": rc,
             "truth_written_by": "the driver (scripts/record_multi_gpu.py note_rc): the process "
                                 "left no truth of its own, so there are no PyTorch stats",
             "rank": int(tag.rsplit("rank", 1)[1]) if JOBS[job]["ranks"] else None,
             "devices_used": devices, "finished": False, "snapshot": None,
             "trace": tag + ".zst" if os.path.exists(os.path.join(a.out, tag + ".zst")) else None,
             "killed_after_s": waited if rc == "killed" else None, "log_tail": tail}
        with open(p, "w") as f:
            json.dump(t, f, indent=1)
        return
    t = json.load(open(p))
    t["exit"] = rc
    if not os.path.exists(os.path.join(a.out, tag + ".zst")):
        t["trace"] = None
    with open(p, "w") as f:
        json.dump(t, f, indent=1)
    print("TRUTH", tag, json.dumps({"exit": rc, "finished": t.get("finished"),
                                    "steps": t.get("steps_completed"), "oom": t.get("oom"),
                                    "hang": bool(t.get("hang")),
                                    "devices_used": t.get("devices_used")}), flush=True)


def compress(out):
    z = shutil.which("zstd")
    for n in sorted(os.listdir(out)):
        if n.endswith(".pickle"):
            p = os.path.join(out, n)
            if z:
                subprocess.run([z, "-19", "-q", "-f", "--rm", p], check=True)
            else:
                import gzip
                with open(p, "rb") as f, gzip.open(p + ".gz", "wb", 9) as g:
                    g.write(f.read())
                os.remove(p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("jobs", nargs="*")
    ap.add_argument("--out", default="multi-gpu-out")
    ap.add_argument("--memsnap", metavar="BIN", help="memsnap binary: each process runs under "
                                                    "`BIN record -o DIR/TAG.zst --`")
    ap.add_argument("--no-compress", action="store_true")
    ap.add_argument("--child")
    ap.add_argument("--tag")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--limit-note", default="")
    a = ap.parse_args()
    a.out = os.path.abspath(a.out)
    os.makedirs(a.out, exist_ok=True)
    if a.child:
        try:
            run_job(a)
        except BaseException:
            traceback.print_exc()
            return 1
        return 0
    jobs = a.jobs or ORDER
    t0 = time.time()
    for job in [j for j in ORDER if j in jobs]:
        t1 = time.time()
        print("===", job, flush=True)
        if job in ("ddp", "fsdp2"):
            rcs = run_ranks(a, job)
        elif job == "oom_rank1":
            lim, note = oom_limit(a)
            print("oom_rank1: rank 1 limit", lim, note, flush=True)
            rcs = run_ranks(a, job, limits={1: lim}, notes={1: note}, wait_first=1, timeout=150)
        else:
            rcs = run_one(a, job)
        n = JOBS[job]["ranks"]
        tags = [f"{job}_rank{r}" for r in range(n)] or [job]
        devices = [[r] for r in range(n)] or [[0, 1] if job == "pipeline" else [0]]
        for tag, rc, dv in zip(tags, rcs, devices):
            note_rc(a, job, tag, rc, dv, 150)
        print(f"=== {job}: exits {rcs}, {time.time() - t1:.1f} s", flush=True)
    if not a.no_compress:
        compress(a.out)
    print("seconds", round(time.time() - t0, 1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
