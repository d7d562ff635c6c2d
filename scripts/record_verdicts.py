#!/usr/bin/env python3
"""Ground truth for memsnap's verdicts: real jobs that run out of memory, each run again for real
under every allocator setting memsnap may recommend, at the same limit.

    python3 scripts/record_verdicts.py --out DIR [JOB...]       # JOB: frag growing rare_long
                                                                 #      outside ddp no_history
    python3 scripts/record_verdicts.py --out DIR --memsnap BIN outside_recorded ddp_recorded

Needs CUDA GPUs and PyTorch (ddp needs two GPUs and NCCL; outside wants a GPU of its own: it
fills the device). Nothing is downloaded; every model is record_snapshots.py's GPT with random
weights, seeds fixed, autocast without its cache (its casts are freed in an order that changes
from run to run).

The *_recorded jobs run each process under `BIN record` (memsnap's recorder: the CUDA
interposer and the PyTorch hook, with its cudaMemGetInfo marks), which writes DIR/TAG.zst beside
the snapshot of the same run; their truth adds, after each optimizer step and at the OOM,
mem_get_info and memory_reserved as the job read them itself: what was held outside PyTorch.

For each job, DIR/JOB.pickle is the snapshot of the run memsnap is asked about: history on from
the start, dumped inside the `except OutOfMemoryError` handler, so that the trace ends where the
job died. DIR/JOB.truth.json holds that run's own result and `reruns`: the job run again, history
off, under each setting of `memsnap whatif`'s matrix and the defaults, twice each, at the same
limit: whether it finished, the step and phase it died in, PyTorch's OOM message and peaks.
`expect` names the answer the job was built to have, where it has a plain one.

A limit is found for each job from a run without one (its steps' allocated peaks: under a limit
the allocator gives back its cache and retries, so reserved peaks without one say little), so
that the job dies in the step meant: frag looks for the least limit at which expandable segments
finish and the defaults die in the cycle's second round or later.
"""
import argparse
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
GiB = 1 << 30
MiB = 1 << 20

# `memsnap whatif`'s matrix (replay/whatif.c), and the defaults
SETTINGS = [
    "",
    "expandable_segments:True",
    "max_split_size_mb:64",
    "max_split_size_mb:128",
    "max_split_size_mb:512",
    "garbage_collection_threshold:0.6",
    "garbage_collection_threshold:0.8",
    "roundup_power2_divisions:4",
    "roundup_power2_divisions:8",
    "expandable_segments:True,roundup_power2_divisions:4",
    "max_split_size_mb:128,garbage_collection_threshold:0.8",
]
VOCAB = 16000

# The jobs' steps: (batch, sequence length) each
# the largest step (12x768) first, while the cache is clean: it fits then, and dies when it comes
# again
FRAG_CYCLE = [(12, 768), (8, 1024), (16, 384), (4, 1536), (2, 2048), (8, 512)]
JOBS = {
    "frag": dict(shapes=FRAG_CYCLE * 4,
                 what="GPT training (6 layers, d=768, AdamW, bf16 autocast) over a cycle of six "
                      "shapes, four times, under the least limit at which expandable segments "
                      "finish and the default settings die"),
    "growing": dict(shapes=[(4 + 4 * i, 512) for i in range(16)],
                    what="GPT training whose batch grows by 4 every step (4 to 64, sequence 512), "
                         "under a limit between the allocated peaks of steps 9 and 10 of a run "
                         "without one: demand that grows every step"),
    "rare_long": dict(shapes=[(8, 512)] * 13 + [(8, 2048)] + [(8, 512)] * 6,
                      what="GPT training on batches of 8x512, one of 8x2048 (step 14 of 20), under "
                           "a limit between the allocated peak of the usual steps and the long "
                           "step's: a rare long step"),
    "outside": dict(shapes=[(8, 1024)] * 12,
                    what="GPT training on batches of 8x1024 beside a raw cudaMalloc (CuPy's "
                         "runtime.malloc, not its pool) that leaves free 80% of what the job "
                         "reserved without it: no per-process limit, the device itself is full"),
    "ddp": dict(shapes=[(4, 512)] * 4 + [(64, 512)] * 2,
                what="DDP over NCCL, one rank a GPU, GPT training; rank 1 under a 5 GiB "
                     "per-process limit; step 5's batch of 64 does not fit there and rank 1 dies "
                     "in its forward (rank 0 then waits on the all-reduce and is stopped)"),
    "ddp_recorded": dict(shapes=[(4, 512)] * 4 + [(64, 512)] * 2,
                         what="the ddp job with each rank under `memsnap record`: rank 1 dies in "
                              "its forward under a 5 GiB limit; NCCL's buffers and the CUDA "
                              "context are held outside PyTorch through calls the interposer "
                              "does not see"),
    "outside_recorded": dict(shapes=[(8, 1024)] * 12,
                             what="the outside job under `memsnap record`: the raw cudaMalloc "
                                  "beside PyTorch (seen by the interposer) fills the device"),
    "no_history": dict(shapes=[(4 + 4 * i, 512) for i in range(16)],
                       what="the growing job under the same kind of limit, history never turned "
                            "on: the snapshot, dumped in the OOM handler, holds the segments only"),
}


def gpt_model():
    from record_snapshots import gpt
    return gpt(d=768, layers=6, vocab=VOCAB, heads=12)


def device_stats(dev):
    from record_snapshots import stats, mem_info
    return {"stats": stats(dev), "mem_get_info": mem_info(dev)}


def run_job(a):
    """One run in this process; writes DIR/TAG.result.json (and DIR/TAG.pickle with history)."""
    import torch
    import torch.nn.functional as F
    dev = a.device
    torch.cuda.set_device(dev)
    torch.cuda.init()
    res = {"job": a.child, "tag": a.tag, "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
           "device": dev, "device_name": torch.cuda.get_device_name(dev),
           "total_memory": torch.cuda.get_device_properties(dev).total_memory,
           "torch": torch.__version__, "limit_bytes": a.limit or None, "fraction": None,
           "history": bool(a.history), "hold_outside_bytes": None}
    t0 = time.time()
    hold = None
    if a.hold:
        import cupy
        with cupy.cuda.Device(dev):
            hold = cupy.cuda.runtime.malloc(a.hold)
        res["hold_outside_bytes"] = a.hold
        res["hold_how"] = "cupy.cuda.runtime.malloc (a plain cudaMalloc, not CuPy's pool)"
    res["mem_get_info_at_start"] = list(torch.cuda.mem_get_info(dev))
    res["reserved_at_start"] = torch.cuda.memory_reserved(dev)
    if a.limit:
        f = a.limit / res["total_memory"]
        torch.cuda.set_per_process_memory_fraction(f, dev)
        res["fraction"] = f
    if a.history:
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python")
    ddp = a.child in ("ddp", "ddp_recorded")
    if ddp:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port), RANK=str(dev),
                          WORLD_SIZE="2")
        dist.init_process_group("nccl", rank=dev, world_size=2,
                                device_id=torch.device("cuda", dev))
        res.update(rank=dev, world_size=2, backend="nccl")
    torch.manual_seed(0)
    model = gpt_model()
    if ddp:
        model = DDP(model, device_ids=[dev])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    shapes = JOBS[a.child]["shapes"]
    res.update(shapes=shapes, steps_total=len(shapes), steps_completed=0, finished=False,
               died_in_step=None, died_in_phase=None, oom=None, step_peaks=[],
               outside_after_steps=[])
    phase = None
    peak_res = peak_alloc = 0
    g = torch.Generator(device="cuda")
    g.manual_seed(1)
    try:
        for i, (b, s) in enumerate(shapes):
            torch.cuda.reset_peak_memory_stats(dev)
            phase = "forward"
            x = torch.randint(0, VOCAB, (b, s), device="cuda", generator=g)
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                logits = model(x)
                loss = F.cross_entropy(logits.float().view(-1, VOCAB), x.view(-1))
            phase = "backward"
            loss.backward()
            phase = "optimizer"
            opt.step()
            # as the job itself reads it, right after the recorder's mark of the same moment
            free, total = torch.cuda.mem_get_info(dev)
            res["outside_after_steps"].append({"step": i + 1, "free": free, "total": total,
                                               "reserved": torch.cuda.memory_reserved(dev)})
            opt.zero_grad(set_to_none=True)
            del x, logits, loss
            phase = None
            st = torch.cuda.memory_stats(dev)
            r, al = st["reserved_bytes.all.peak"], st["allocated_bytes.all.peak"]
            res["step_peaks"].append({"step": i + 1, "reserved": r, "allocated": al,
                                      "requested": st["requested_bytes.all.peak"]})
            peak_res, peak_alloc = max(peak_res, r), max(peak_alloc, al)
            res["steps_completed"] = i + 1
        res["finished"] = True
    except torch.cuda.OutOfMemoryError as e:
        res.update(died_in_step=res["steps_completed"] + 1, died_in_phase=phase, oom=str(e))
        res["at_oom"] = device_stats(dev)
        res["at_oom"]["reserved"] = torch.cuda.memory_reserved(dev)
        st = res["at_oom"]["stats"]
        peak_res = max(peak_res, st["reserved_bytes.all.peak"])
        peak_alloc = max(peak_alloc, st["allocated_bytes.all.peak"])
        if a.history or a.child == "no_history":
            path = os.path.join(a.out, a.tag + ".pickle")
            torch.cuda.memory._dump_snapshot(path)
            res["snapshot"] = os.path.basename(path)
            res["snapshot_written_by"] = "torch.cuda.memory._dump_snapshot in the OOM handler"
    # the peaks over the whole run (the per-step counters were reset at each step's start)
    res["peak_reserved_bytes"] = peak_res
    res["peak_allocated_bytes"] = peak_alloc
    res["end"] = device_stats(dev)
    res["seconds"] = round(time.time() - t0, 2)
    if a.history and res["finished"]:
        path = os.path.join(a.out, a.tag + ".pickle")
        torch.cuda.memory._dump_snapshot(path)
        res["snapshot"] = os.path.basename(path)
    if res.get("snapshot"):
        with open(os.path.join(a.out, res["snapshot"]), "rb") as f:
            snap = pickle.load(f)
        tr = snap.get("device_traces", [[]])
        res["trace_entries"] = len(tr[dev]) if len(tr) > dev else 0
        res["oom_entry_index"] = next((k for k, e in enumerate(tr[dev] if len(tr) > dev else [])
                                       if e.get("action") == "oom"), None)
    with open(os.path.join(a.out, a.tag + ".result.json"), "w") as f:
        json.dump(res, f, indent=1)
    print("RESULT", a.tag, json.dumps({k: res[k] for k in ("finished", "died_in_step",
          "died_in_phase", "peak_reserved_bytes", "seconds")}), flush=True)
    if ddp:
        # a rank that died leaves the other in its all-reduce: nobody waits for a clean exit
        sys.stdout.flush()
        os._exit(0)
    if hold is not None:
        import cupy
        cupy.cuda.runtime.free(hold)


def under_memsnap(memsnap, out, tag, cmd):
    """cmd under `memsnap record`, writing DIR/TAG.zst, where a memsnap binary is given."""
    return [memsnap, "record", "-o", os.path.join(out, tag + ".zst"), "--"] + cmd if memsnap else cmd


def spawn(out, job, tag, conf="", limit=0, device=0, history=False, hold=0, timeout=240,
          memsnap=None):
    """Runs one job in a process of its own; returns its result (or a failure record)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", NCCL_NVLS_ENABLE="0",
               TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    cmd = [sys.executable, HERE, "--child", job, "--tag", tag, "--out", out, "--device",
           str(device), "--limit", str(limit), "--hold", str(hold)]
    if history:
        cmd.append("--history")
    cmd = under_memsnap(memsnap, out, tag, cmd)
    with open(os.path.join(out, tag + ".log"), "w") as lf:
        try:
            rc = subprocess.run(cmd, env=env, stdout=lf, stderr=subprocess.STDOUT,
                                timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    p = os.path.join(out, tag + ".result.json")
    if rc == 0 and os.path.exists(p):
        with open(p) as f:
            return json.load(f)
    with open(os.path.join(out, tag + ".log")) as lf:
        tail = lf.read().splitlines()[-15:]
    print("FAILED", tag, rc, "\n".join(tail), flush=True)
    return {"tag": tag, "alloc_conf": conf, "failed": True, "rc": rc, "log_tail": tail}


def brief(r):
    keys = ("alloc_conf", "finished", "steps_completed", "died_in_step", "died_in_phase",
            "peak_reserved_bytes", "peak_allocated_bytes", "oom", "failed")
    return {k: r.get(k) for k in keys if k in r}


def round_down(n, to=2 * MiB):
    return n // to * to


def reruns(pool, out, job, limit, device=0, hold=0):
    """The job under every setting, twice each, at the limit."""
    futs = {}
    for k, conf in enumerate(SETTINGS):
        for rep in (1, 2):
            tag = f"{job}_rerun{k:02d}_{rep}"
            futs[(conf, rep)] = pool.submit(spawn, out, job, tag, conf, limit, device, False, hold)
    table = {}
    for (conf, rep), fu in futs.items():
        table.setdefault(conf or "(defaults)", []).append(brief(fu.result()))
    return table


def verdict_of(runs):
    """'finishes', 'dies' or 'unknown' (a setting that finished once and died once)."""
    fin = {r.get("finished") for r in runs if not r.get("failed")}
    return "finishes" if fin == {True} else "dies" if fin == {False} else "unknown"


def write_truth(out, job, recorded, table, expect, notes, extra=None):
    t = {"job": job, "what": JOBS[job]["what"], "recorded": brief(recorded) | {
            k: recorded.get(k) for k in ("limit_bytes", "fraction", "total_memory", "device_name",
                                         "torch", "hold_outside_bytes", "mem_get_info_at_start",
                                         "at_oom", "step_peaks", "shapes", "trace_entries",
                                         "oom_entry_index", "snapshot", "seconds")},
         "reruns": table, "rerun_outcome": {c: verdict_of(rs) for c, rs in table.items()},
         "expect": expect, "notes": notes}
    if extra:
        t.update(extra)
    with open(os.path.join(out, job + ".truth.json"), "w") as f:
        json.dump(t, f, indent=1)
    print("TRUTH", job, json.dumps(t["rerun_outcome"]), flush=True)


def job_frag(pool, out, dev):
    free = [pool.submit(spawn, out, "frag", f"frag_probe{k}", c, 0, dev)
            for k, c in enumerate(["", "expandable_segments:True"])]
    pd, pe = [f.result() for f in free]
    base = max(pe["peak_reserved_bytes"], pd["peak_allocated_bytes"])
    cands = sorted({round_down(int(base * f)) for f in
                    (1.0, 1.02, 1.04, 1.06, 1.08, 1.10, 1.13, 1.16, 1.20, 1.25, 1.30, 1.35)})
    fut = {(L, c): pool.submit(spawn, out, "frag", f"frag_search_{L // MiB}_{k}", c, L, dev)
           for L in cands for k, c in enumerate(["", "expandable_segments:True"])}
    res = {key: f.result() for key, f in fut.items()}
    search = [{"limit_bytes": L, "defaults": brief(res[(L, "")]),
               "expandable": brief(res[(L, "expandable_segments:True")])} for L in cands]
    ok = [L for L in cands if res[(L, "expandable_segments:True")].get("finished")
          and res[(L, "")].get("finished") is False]
    late = [L for L in ok if (res[(L, "")].get("died_in_step") or 0) > len(FRAG_CYCLE)]
    limit = (late or ok or [None])[0]
    notes = {"probe_defaults": brief(pd), "probe_expandable": brief(pe), "search": search}
    if limit is None:
        limit = cands[len(cands) // 2]
        notes["no_separating_limit"] = "no limit tried let expandable segments finish while " \
                                       "the defaults died"
    rec = spawn(out, "frag", "frag", "", limit, dev, history=True)
    write_truth(out, "frag", rec, reruns(pool, out, "frag", limit, dev),
                {"saved_by": "expandable_segments:True"} if limit in ok else None, notes)


def job_from_probe(pool, out, job, dev, pick):
    probe = spawn(out, job, f"{job}_probe", "", 0, dev)
    limit = round_down(pick(probe["step_peaks"]))
    rec = spawn(out, job, job, "", limit, dev, history=True)
    return probe, limit, rec


def job_growing(pool, out, dev):
    probe, limit, rec = job_from_probe(
        pool, out, "growing", dev, lambda p: (p[8]["allocated"] + p[9]["allocated"]) // 2)
    write_truth(out, "growing", rec, reruns(pool, out, "growing", limit, dev),
                {"growing_demand": True}, {"probe": brief(probe) | {"step_peaks": probe["step_peaks"]}})


def job_rare_long(pool, out, dev):
    def pick(p):
        usual = max(x["allocated"] for k, x in enumerate(p) if k != 13)
        return (usual + p[13]["allocated"]) // 2
    probe, limit, rec = job_from_probe(pool, out, "rare_long", dev, pick)
    write_truth(out, "rare_long", rec, reruns(pool, out, "rare_long", limit, dev), None,
                {"probe": brief(probe) | {"step_peaks": probe["step_peaks"]}})


def job_no_history(pool, out, dev):
    probe = json.load(open(os.path.join(out, "growing_probe.result.json")))
    limit = round_down((probe["step_peaks"][8]["allocated"] + probe["step_peaks"][9]["allocated"]) // 2)
    rec = spawn(out, "no_history", "no_history", "", limit, dev)
    t = {"job": "no_history", "what": JOBS["no_history"]["what"], "recorded": rec}
    with open(os.path.join(out, "no_history.truth.json"), "w") as f:
        json.dump(t, f, indent=1)


def job_outside(out, dev):
    """On a device of its own: the reruns one at a time (each fills the device)."""
    import concurrent.futures as cf
    probe = spawn(out, "outside", "outside_probe", "", 0, dev)
    free_before = probe["mem_get_info_at_start"][0]
    need = int(probe["peak_reserved_bytes"] * 0.8)
    hold = round_down(free_before - need)
    rec = spawn(out, "outside", "outside", "", 0, dev, history=True, hold=hold)
    with cf.ThreadPoolExecutor(1) as one:
        table = reruns(one, out, "outside", 0, dev, hold)
    write_truth(out, "outside", rec, table, {"cause": "outside_pytorch"},
                {"probe": brief(probe)}, {"hold_outside_bytes": hold})


def job_outside_recorded(out, dev, memsnap):
    """The outside job once under `memsnap record`, its hold found as job_outside finds it."""
    probe = spawn(out, "outside_recorded", "outside_recorded_probe", "", 0, dev)
    need = int(probe["peak_reserved_bytes"] * 0.8)
    hold = round_down(probe["mem_get_info_at_start"][0] - need)
    rec = spawn(out, "outside_recorded", "outside_recorded", "", 0, dev, history=True, hold=hold,
                memsnap=memsnap)
    t = {"job": "outside_recorded", "what": JOBS["outside_recorded"]["what"], "recorded": rec,
         "probe": brief(probe), "hold_outside_bytes": hold, "expect": {"cause": "outside_pytorch"}}
    with open(os.path.join(out, "outside_recorded.truth.json"), "w") as f:
        json.dump(t, f, indent=1)
    print("TRUTH outside_recorded", json.dumps(brief(rec)), flush=True)


def job_ddp(out, job="ddp", memsnap=None):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONUNBUFFERED="1", NCCL_NVLS_ENABLE="0",
               TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    procs = []
    for r in (0, 1):
        tag = f"{job}_rank{r}"
        cmd = [sys.executable, HERE, "--child", job, "--tag", tag, "--out", out,
               "--device", str(r), "--limit", str(5 * GiB if r == 1 else 0), "--port", str(port),
               "--history"]
        cmd = under_memsnap(memsnap, out, tag, cmd)
        procs.append(subprocess.Popen(cmd, env=env, stdout=open(os.path.join(out, tag + ".log"), "w"),
                                      stderr=subprocess.STDOUT, start_new_session=True))
    try:
        procs[1].wait(timeout=200)
    except subprocess.TimeoutExpired:
        pass
    time.sleep(10)
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    p = os.path.join(out, f"{job}_rank1.result.json")
    rec = json.load(open(p)) if os.path.exists(p) else {"failed": True}
    t = {"job": job, "what": JOBS[job]["what"], "recorded_rank1": rec,
         "rank0_stopped": "rank 0 was killed waiting on the all-reduce of the step rank 1 died in"}
    with open(os.path.join(out, f"{job}.truth.json"), "w") as f:
        json.dump(t, f, indent=1)
    print("TRUTH", job, json.dumps(brief(rec)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("jobs", nargs="*")
    ap.add_argument("--out", default="verdicts-out")
    ap.add_argument("--parallel", type=int, default=6,
                    help="runs at once on the shared GPU (each under its own limit)")
    ap.add_argument("--child")
    ap.add_argument("--tag")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--hold", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--history", action="store_true")
    ap.add_argument("--memsnap", metavar="BIN", help="memsnap binary for the *_recorded jobs")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.child:
        try:
            run_job(a)
        except BaseException:
            traceback.print_exc()
            return 1
        return 0
    jobs = a.jobs or ["frag", "growing", "rare_long", "no_history", "outside", "ddp"]
    t0 = time.time()
    import torch
    ngpu = torch.cuda.device_count()
    other = 1 if ngpu > 1 else 0
    with ThreadPoolExecutor(a.parallel) as pool, ThreadPoolExecutor(4) as drivers:
        fs = []
        if "outside" in jobs:
            fs.append(drivers.submit(job_outside, a.out, other))
        for j, fn in (("frag", job_frag), ("growing", job_growing), ("rare_long", job_rare_long)):
            if j in jobs:
                fs.append(drivers.submit(fn, pool, a.out, 0))
        for f in fs:
            f.result()
    if "no_history" in jobs:
        job_no_history(None, a.out, 0)
    if "ddp" in jobs and ngpu > 1:
        job_ddp(a.out)
    if "ddp_recorded" in jobs and ngpu > 1:
        job_ddp(a.out, "ddp_recorded", a.memsnap)
    if "outside_recorded" in jobs:
        job_outside_recorded(a.out, other, a.memsnap)
    print("seconds", round(time.time() - t0, 1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
