#!/usr/bin/env python3
"""explain's inference categories judged by what generation jobs counted themselves.

usage: inference.py MEMSNAP DIR
For each DIR/NAME.truth.json (scripts/record_snapshots.py's infer_* cases: the weights' bytes
counted from the model, each request's KV cache measured from its tensors' shapes, its span on
the trace's clock), runs `MEMSNAP explain --json` on DIR/NAME.pickle.zst (PyTorch's snapshot)
and DIR/NAME.zst (memsnap's recording of the same run) and checks:
  - the job is told a generation job, with one request per request the job served;
  - weights (found whole, and at the peak) within 1% of the model's bytes;
  - the KV cache's own peak within 5% of the largest request's cache, and each request's
    within 5% of its own;
  - each request's growth per token: for a dynamic cache the bytes of one token's keys and
    values (2 x layers x batch x key-value heads x head size x dtype size), for a static one 0,
    for a paged one the blocks made between the prompt and the last forward's start over its
    tokens; its forwards, where the job counted them (eager forwards);
  - in the snapshot, each request's span inside the job's own (start_us, end_us), and the
    peak's request the one whose span holds the peak's time.
A truth with eval_loops (the train_eval case: a training job that evaluates between its
optimizer steps) is judged as a training job: its parameters within 1% of the model's, one
evaluation loop per evaluation the job ran, each with the job's forwards, starting inside the
job's own span of it and ending no earlier than its last request, its requests judged as above
(each inside the job's own span of it).
A truth whose cache is static_kept (one cache made before the first request and reused by all)
expects one span said to be one request or several (may_be_several), with all the job's
forwards, the cache's bytes and no growth per token.
The two dynamic-cache snapshots are judged again from entries 40, 1000 and 17520 on (a trace
that starts mid-run: in the weights' loading, in the first request, between requests): the
weights are not told, each request left keeps its growth a token, and the first is said to
begin before the trace exactly where some of the forwards the job counted lie before the cut.
They are judged once more with their first request's cache tensors freed after the second
request's end instead (a generate output kept with its cache until the next
returns): still three requests, each with the job's forwards, KV cache and growth a token.
NAME_nostacks.zst (no snapshot beside it) is memsnap's recording of the job without stacks
(`memsnap record --stacks none`), judged as the snapshots without frames below.
Each snapshot is judged again with its frames taken out (what a recording without stacks
holds): a dynamic cache's jobs by the same checks, their forwards from the cache's concatenation
chains; the others must say they cannot be told.
Exit 1 on any failure.
"""
import json
import math
import os
import pickle
import subprocess
import sys
import tempfile

fails = 0


def check(ok, what):
    global fails
    print(("PASS " if ok else "FAIL: ") + what)
    fails += not ok


def near(a, b, tol):
    return a is not None and b is not None and abs(a - b) <= tol * max(abs(b), 1)


def expected_per_token(t, q):
    m = t["model"]
    cache = m.get("cache", "dynamic")  # an evaluation loop's generate: the dynamic cache
    if cache in ("static", "static_kept"):
        return 0
    if cache == "dynamic":
        return q["kv_bytes_per_token"]
    blk = m["block_tokens"]
    p, f = q["prompt_tokens"], q["forwards"]
    grown = math.ceil((p + f - 2) / blk) - math.ceil(p / blk)
    return grown * blk * q["kv_bytes_per_token"] // (f - 2)


def judge_requests(t, tag, ext, reqs, truth_reqs, first_us):
    check(len(reqs) == len(truth_reqs), f"{tag}: {len(reqs)} requests vs {len(truth_reqs)}")
    for q, tq in zip(reqs, truth_reqs):
        i = tq["request"] + 1
        check(near(q["kv_cache_peak_bytes"], tq["kv_bytes"], 0.05),
              f"{tag}: request {i} KV cache {q['kv_cache_peak_bytes']} vs {tq['kv_bytes']}")
        if tq["forwards"] is not None:
            check(q["forwards"] == tq["forwards"],
                  f"{tag}: request {i} forwards {q['forwards']} vs {tq['forwards']}")
            want = expected_per_token(t, tq)
            got = q["kv_cache_bytes_per_token"]
            check(near(got, want, 0.05), f"{tag}: request {i} KV per token {got} vs {want}")
        else:  # compiled forwards: the cache is made once, it does not grow
            got = q["kv_cache_bytes_per_token"]
            check(got == expected_per_token(t, tq),
                  f"{tag}: request {i} KV per token {got} vs 0 (made once)")
        if ext == "pickle.zst":
            a = first_us + q["first_time_s"] * 1e6
            b = first_us + q["end_time_s"] * 1e6
            check(tq["start_us"] - 5 <= a <= b <= tq["end_us"] + 5,
                  f"{tag}: request {i} span {a:.0f}..{b:.0f} in the job's "
                  f"{tq['start_us']}..{tq['end_us']}")


def judge_kept(t, tag, reqs):
    """One cache made before the first request and reused by all: the allocations cannot tell
    the requests apart, so one span that says so, with every forward and the cache's bytes."""
    fw = sum(q["forwards"] for q in t["requests"])
    check(len(reqs) == 1 and reqs[0]["may_be_several"],
          f"{tag}: one span said to be one request or several ({len(reqs)} found)")
    if reqs:
        q = reqs[0]
        check(q["forwards"] == fw, f"{tag}: its forwards {q['forwards']} vs the job's {fw}")
        check(near(q["kv_cache_peak_bytes"], t["kv_peak_bytes"], 0.05),
              f"{tag}: its KV cache {q['kv_cache_peak_bytes']} vs {t['kv_peak_bytes']}")
        check(q["kv_cache_bytes_per_token"] == 0,
              f"{tag}: KV per token {q['kv_cache_bytes_per_token']} vs 0 (made once)")


def judge_training(t, tag, ext, r):
    first_us = t["content"]["entry_time_us_first_last"][0]
    check(r.get("job") == "training", f"{tag}: a training job")
    p = t["model"]["parameter_bytes"]
    got = r["categories"]["parameters"]
    check(near(got, p, 0.01), f"{tag}: parameters {got} vs the model's {p}")
    ev = r.get("eval_loops") or {}
    loops = ev.get("loops") or []
    check(len(loops) == len(t["eval_loops"]),
          f"{tag}: {len(loops)} evaluation loops vs {len(t['eval_loops'])}")
    kvp = (r["category_peaks"].get("kv_cache") or {}).get("bytes")
    want = max(lp["kv_peak_bytes"] for lp in t["eval_loops"])
    check(near(kvp, want, 0.05), f"{tag}: KV cache peak {kvp} vs {want}")
    for lp, tl in zip(loops, t["eval_loops"]):
        n = tl["round"] + 1
        check(lp["forwards"] == tl["forwards"],
              f"{tag}: loop {n} forwards {lp['forwards']} vs {tl['forwards']}")
        if ext == "pickle.zst":
            a = first_us + lp["first_time_s"] * 1e6
            b = first_us + lp["end_time_s"] * 1e6
            last = first_us + lp["requests"][-1]["end_time_s"] * 1e6 if lp["requests"] else a
            check(tl["start_us"] - 5 <= a <= tl["end_us"] + 5 and b >= last,
                  f"{tag}: loop {n} span {a:.0f}..{b:.0f} begins in the job's "
                  f"{tl['start_us']}..{tl['end_us']} and holds its requests (to {last:.0f})")
        judge_requests(t, f"{tag}: loop {n}", ext, lp["requests"], tl["requests"], first_us)


def stripped(d, name, tmp):
    """The snapshot with every frame taken out: what a recording without stacks holds."""
    raw = subprocess.run(["zstd", "-qdc", os.path.join(d, name + ".pickle.zst")],
                         capture_output=True, check=True).stdout
    snap = pickle.loads(raw)
    for tr in snap["device_traces"]:
        for e in tr:
            e["frames"] = []
    for seg in snap["segments"]:
        for b in seg.get("blocks", []):
            b["frames"] = []
    path = os.path.join(tmp, name + ".nostacks.pickle")
    with open(path, "wb") as f:
        pickle.dump(snap, f)
    return path


def judge_stripped(t, tag, r):
    """Without stacks: a dynamic cache's chains give the forwards, judged as with stacks; other
    jobs say what cannot be told."""
    if "eval_loops" in t:
        ev = r.get("eval_loops") or {}
        check(r.get("job") == "training" and ev.get("looked_for") is False and ev.get("why_not"),
              f"{tag}: a training job whose evaluation loops are not looked for, and why")
        return False
    if t["model"]["cache"] == "dynamic":
        inf = r.get("inference") or {}
        check(inf.get("forwards_from") == "concatenation chains",
              f"{tag}: forwards from the KV cache's chains ({inf.get('forwards_from')})")
        return True
    check(r.get("job") is None and r.get("categories_note"),
          f"{tag}: not told, and why ({(r.get('categories_note') or '')[:60]})")
    return False


def judge_mid_run(ms, d, name, t, tmp):
    """A dynamic-cache job's snapshot whose trace starts mid-run: its first N entries taken out
    (PyTorch's ring buffer keeps the last entries; history turned on late). The weights are not
    told; each request still in it keeps its growth a token; the first is said to begin before
    the trace exactly where some of the forwards the job counted lie before the cut."""
    raw = subprocess.run(["zstd", "-qdc", os.path.join(d, name + ".pickle.zst")],
                         capture_output=True, check=True).stdout
    whole = pickle.loads(raw)
    for n in (40, 1000, 17520):
        snap = dict(whole, device_traces=[whole["device_traces"][0][n:]])
        cut_us = snap["device_traces"][0][0]["time_us"]
        path = os.path.join(tmp, f"{name}.from{n}.pickle")
        with open(path, "wb") as f:
            pickle.dump(snap, f)
        r = json.loads(subprocess.run([ms, "-q", "explain", "--json", path],
                                      capture_output=True, text=True, check=True).stdout)
        tag = f"{name} from entry {n}"
        inf = r.get("inference") or {}
        check(r.get("job") == "inference" and inf["weights"]["bytes"] is None,
              f"{tag}: a generation job whose weights are not told")
        left = [q for q in t["requests"] if q["end_us"] > cut_us]
        reqs = inf.get("requests", [])
        check(len(reqs) == len(left), f"{tag}: {len(reqs)} requests vs {len(left)} in the trace")
        for q, tq in zip(reqs, left):
            # begun before the trace exactly where some of its forwards lie before the cut
            began = q["forwards"] < tq["forwards"]
            check(q["began_before_trace"] == began,
                  f"{tag}: request {tq['request'] + 1} begun before the trace "
                  f"{q['began_before_trace']}, {q['forwards']} of its {tq['forwards']} "
                  f"forwards in it")
            got = q["kv_cache_bytes_per_token"]
            check(got == tq["kv_bytes_per_token"],
                  f"{tag}: request {tq['request'] + 1} KV per token {got} vs "
                  f"{tq['kv_bytes_per_token']}")


def judge_held(ms, d, name, t, tmp):
    """The job as if its first request's output were kept, with its cache, until the second
    request returned (generate(..., return_dict_in_generate=True) assigned in a loop): request
    1's cache tensors are freed after request 2's end instead, under addresses of their own.
    The three requests stay three, each with the job's forwards, KV cache and growth a token."""
    raw = subprocess.run(["zstd", "-qdc", os.path.join(d, name + ".pickle.zst")],
                         capture_output=True, check=True).stdout
    snap = pickle.loads(raw)
    tr = snap["device_traces"][0]
    r0, r1 = t["requests"][0], t["requests"][1]
    made = {}  # address -> index of its alloc entry in request 1
    for i, e in enumerate(tr):
        if e["action"] == "alloc" and r0["start_us"] <= e["time_us"] <= r0["end_us"]:
            made[e["addr"]] = i
    last = max(tr[i]["time_us"] for i in made.values())  # its last allocation: then it ends
    cache = {math.prod(sh) * t["model"]["dtype_bytes"] for sh in r0["kv_cache_shapes"]}
    held = [i for i, e in enumerate(tr)  # its cache's tensors, as they were at its end
            if e["action"] in ("free_requested", "free_completed") and e["addr"] in made and
            made[e["addr"]] < i and last < e["time_us"] < r1["start_us"] and e["size"] in cache]
    moved = {}
    for n, i in enumerate(held):
        e = tr[i]
        addr = moved.setdefault(e["addr"], 0x7e0000000000 + 0x100000 * len(moved))
        tr[made[e["addr"]]]["addr"] = addr
        e["addr"] = addr
        e["time_us"] = r1["end_us"] + 1 + n
    after = [i for i, e in enumerate(tr) if e["time_us"] <= r1["end_us"]][-1] + 1
    keep = [e for i, e in enumerate(tr) if i not in set(held)]
    pos = sum(1 for i in range(after) if i not in set(held))
    snap["device_traces"][0] = keep[:pos] + [tr[i] for i in held] + keep[pos:]
    path = os.path.join(tmp, name + ".held.pickle")
    with open(path, "wb") as f:
        pickle.dump(snap, f)
    r = json.loads(subprocess.run([ms, "-q", "explain", "--json", path], capture_output=True,
                                  text=True, check=True).stdout)
    tag = f"{name} with request 1's cache held into request 2 ({len(held)} frees moved)"
    reqs = (r.get("inference") or {}).get("requests", [])
    check(len(held) > 0 and len(reqs) == len(t["requests"]),
          f"{tag}: {len(reqs)} requests vs {len(t['requests'])}")
    for q, tq in zip(reqs, t["requests"]):
        i = tq["request"] + 1
        check(q["forwards"] == tq["forwards"] and near(q["kv_cache_peak_bytes"], tq["kv_bytes"], 0.05)
              and q["kv_cache_bytes_per_token"] == tq["kv_bytes_per_token"],
              f"{tag}: request {i} forwards {q['forwards']}, KV cache {q['kv_cache_peak_bytes']}, "
              f"a token {q['kv_cache_bytes_per_token']} vs {tq['forwards']}, {tq['kv_bytes']}, "
              f"{tq['kv_bytes_per_token']}")


def judge(ms, d, name, tmp):
    t = json.load(open(os.path.join(d, name + ".truth.json")))
    for ext in ("pickle.zst", "zst", "nostacks"):
        path = os.path.join(d, f"{name}.{ext}")
        if ext == "nostacks":
            if not os.path.exists(os.path.join(d, name + ".pickle.zst")):
                continue
            path = stripped(d, name, tmp)
        if not os.path.exists(path):
            continue
        r = json.loads(subprocess.run([ms, "explain", "--json", path], capture_output=True,
                                      text=True, check=True).stdout)
        tag = f"{name}.{ext}"
        if ext == "nostacks":
            if not judge_stripped(t, tag, r):
                continue
            ext = "pickle.zst"  # the same times as the snapshot's
        elif name.endswith("_nostacks") and not judge_stripped(t, tag, r):
            continue  # recorded by `memsnap record --stacks none`
        if "eval_loops" in t:
            judge_training(t, tag, ext, r)
            continue
        inf = r.get("inference")
        check(r.get("job") == "inference" and inf is not None, f"{tag}: a generation job")
        if not inf:
            continue
        w = t["model"]["weights"]["bytes"]
        check(near(inf["weights"]["bytes"], w, 0.01),
              f"{tag}: weights {inf['weights']['bytes']} vs the model's {w}")
        check(near(r["categories"]["weights"], w, 0.01),
              f"{tag}: weights at the peak {r['categories']['weights']} vs {w}")
        kvp = r["category_peaks"]["kv_cache"]["bytes"]
        check(near(kvp, t["kv_peak_bytes"], 0.05),
              f"{tag}: KV cache peak {kvp} vs {t['kv_peak_bytes']}")
        reqs = inf["requests"]
        if t["model"]["cache"] == "static_kept":
            judge_kept(t, tag, reqs)
            continue
        first_us = t["content"]["entry_time_us_first_last"][0]
        if ext == "pickle.zst":  # the peak's request: the job's own span that holds its time
            at = first_us + r["peak"]["time_s"] * 1e6
            want = next((q["request"] + 1 for q in t["requests"]
                         if q["start_us"] - 5 <= at <= q["end_us"] + 5), 0)
            check(inf["peak_request"] == want,
                  f"{tag}: the peak in request {inf['peak_request']} vs the job's {want}")
        judge_requests(t, tag, ext, reqs, t["requests"], first_us)


def main():
    ms, d = sys.argv[1], sys.argv[2]
    names = sorted(f[:-len(".truth.json")] for f in os.listdir(d) if f.endswith(".truth.json"))
    if not names:
        print(f"FAIL: no truth files in {d}")
        return 1
    for n in names:
        with tempfile.TemporaryDirectory() as tmp:
            judge(ms, d, n, tmp)
            if n in ("gpt2_dynamic", "llama_dynamic"):
                truth = json.load(open(os.path.join(d, n + ".truth.json")))
                judge_mid_run(ms, d, n, truth, tmp)
                judge_held(ms, d, n, truth, tmp)
    print(f"{fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
