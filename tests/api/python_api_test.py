#!/usr/bin/env python3
"""The Python API (python/memsnap/analyze.py) as a notebook uses it, from the build tree laid out
as an installation: each method's dict must equal what the command's --json prints, options
named as the flags; exit 1 and 2 raise MemsnapError with the command's message and code, 3 to 5
are answers.

usage: python_api_test.py BUILD_LIB_DIR MEMSNAP SOURCE_DIR
"""
import json
import os
import subprocess
import sys

libdir, memsnap_bin, src = sys.argv[1:4]
sys.path.insert(0, os.path.join(libdir, "memsnap", "python"))
os.environ.pop("MEMSNAP_LIBDIR", None)  # found beside the package, as installed
import memsnap  # noqa: E402

fails = 0


def check(ok, what):
    global fails
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    fails += not ok


def cli(*args):
    p = subprocess.run([memsnap_bin, "-q"] + list(args), capture_output=True, text=True)
    return p.returncode, json.loads(p.stdout) if p.stdout.strip() else None


T = os.path.join(src, "testdata/snapshots")
oom = os.path.join(T, "dynamic_oom.pickle")
pipe = os.path.join(T, "multi_gpu/pipeline.pickle.zst")
ddp0, ddp1 = os.path.join(T, "multi_gpu/ddp_rank0.zst"), os.path.join(T, "multi_gpu/ddp_rank1.zst")

with memsnap.open(oom) as f:
    for name, got, args in (
            ("info", f.info(), ["info", "--json"]),
            ("stats", f.stats(), ["stats", "--json"]),
            ("replay(limit=5GiB)", f.replay(limit="5GiB"), ["replay", "--json", "--limit", "5GiB"]),
            ("replay(alloc_conf=...)", f.replay(alloc_conf="expandable_segments:True"),
             ["replay", "--json", "--alloc-conf", "expandable_segments:True"]),
            ("verify", f.verify(), ["verify", "--json"]),
            ("explain(jobs=2)", f.explain(jobs=2), ["explain", "--json", "--jobs", "2"]),
            ("check(max_peak_reserved=1GiB)", f.check(max_peak_reserved="1GiB"),
             ["check", "--json", "--max-peak-reserved", "1GiB"])):
        rc, want = cli(*(args + [oom]))
        check(got == want, "%s equals memsnap %s (exit %d)" % (name, " ".join(args), rc))
    # whatif: the configs as its --configs file lists them
    cfg = os.path.join(os.environ.get("TMPDIR", "/tmp"), "memsnap_api_configs.%d" % os.getpid())
    with open(cfg, "w") as c:
        c.write("recorded\nexpandable_segments:True\n")
    rc, want = cli("whatif", "--json", "--jobs", "2", "--configs", cfg, oom)
    os.unlink(cfg)
    got = f.whatif(configs=["recorded", "expandable_segments:True"], jobs=2)
    check(got == want and len(got["settings"]) == 2, "whatif(configs=[...]) equals --configs")
    # an exceeded budget (check's exit 5) is an answer, not an error
    got = f.check(max_peak_reserved="1GiB", allow_oom=True)
    check(got["passed"] is False and len(got["exceeded"]) == 1 and got["oom_allowed"] is True,
          "check over its budget returns the dict that says so: %s" % got["exceeded"])

# a file with two devices: the device-keyed object; device= on open takes one
with memsnap.open(pipe) as f:
    rc, want = cli("replay", "--json", pipe)
    check(f.replay() == want and "devices" in want, "two devices: the device-keyed object")
with memsnap.open(pipe, device=1) as f:
    rc, want = cli("stats", "--json", "--device", "1", pipe)
    check(f.stats() == want, "open(device=1).stats() equals stats --device 1")

# diff: another File or a path
with memsnap.open(ddp0) as a, memsnap.open(ddp1) as b:
    rc, want = cli("diff", "--json", ddp0, ddp1)
    check(a.diff(b) == want and a.diff(ddp1) == want, "diff(File) and diff(path) equal diff --json")

# errors: one exception type with the message and the code
try:
    memsnap.open(os.path.join(T, "no-such-file.pickle"))
    check(False, "a missing file raises")
except memsnap.MemsnapError as e:
    check(e.code == 1 and "no-such-file" in str(e), "a missing file: code 1, %s" % e)
with memsnap.open(oom) as f:
    for what, call in (("limit with memory_fraction", lambda: f.replay(limit="1GiB",
                                                                       memory_fraction=0.5)),
                       ("an option replay does not take", lambda: f.replay(top=3)),
                       ("device 7 (nothing there)", lambda: f.stats(device=7))):
        try:
            call()
            check(False, what + " raises")
        except memsnap.MemsnapError as e:
            check(e.code in (1, 2) and str(e), "%s: code %d, %s" % (what, e.code, e))
f.close()
try:
    f.info()
    check(False, "a closed file refuses")
except ValueError:
    check(True, "a closed file refuses (ValueError)")
try:
    memsnap.open(oom).whatif(configs=[])
    check(False, "whatif(configs=[]) raises")
except ValueError:
    check(True, "whatif(configs=[]): ValueError, not the default matrix")
with memsnap.open(oom.encode()) as f:
    check(f.info()["trace"] == oom, "a path as bytes")
try:
    memsnap.open(oom).replay(limit=[1])
    check(False, "a list as a size raises")
except TypeError:
    check(True, "a value that is no number or string: TypeError")

# closed while another thread asks: the close waits for the answer; a question after it raises
import concurrent.futures  # noqa: E402
with concurrent.futures.ThreadPoolExecutor(2) as ex:
    with memsnap.open(oom) as f:
        fut = ex.submit(f.whatif)
    check(fut.result()["trace"] == oom,
          "a file closed while a thread asks it: the answer comes first")
    f = memsnap.open(oom)
    futs = [ex.submit(f.replay) for _ in range(4)]
    f.close()
    f.close()
    done = closed = 0
    for x in futs:
        try:
            done += x.result()["trace"] == oom
        except ValueError:
            closed += 1
    check(done + closed == 4 and done >= 1,
          "questions racing a close: answered, or ValueError (%d, %d)" % (done, closed))

# windows: from=/to= and windows= as the commands' flags
with memsnap.open(oom) as f:
    r = f.replay(windows="Optimizer.step")
    w = f.check(**{"from": "100", "to": "400", "max_peak_reserved": "64GiB"})
    check(isinstance(r["windows"], list) and w["window"]["from_event"] == 100 and
          w["window"]["to_event"] == 400, "windows through the library")
    try:
        f.replay(**{"from": "mark:no such phase"})
        check(False, "a missing mark raises")
    except memsnap.MemsnapError as e:
        check(e.code == 1 and "no such mark" in str(e), "a missing mark: MemsnapError, code 1")
    try:
        f.replay(to=10 ** 9)
        check(False, "an event past the end raises")
    except memsnap.MemsnapError as e:
        # the message names the option as given here, not the command's --to
        check("to=1000000000: the trace has" in str(e) and "--to" not in str(e),
              "errors name options as the library takes them: %s" % e)

# at=, your own categories (categories={name: regex}) and the generation job's answers, the
# command's JSON byte for byte
gen = os.path.join(T, "inference", "gpt2_dynamic.pickle.zst")
with memsnap.open(gen) as f:
    x = f.explain(categories={"cache": "cache_utils"}, at="alloc:0x7fb75ffce200#2")
    rc, cmd = cli("explain", "--json", "--category", "cache=cache_utils", "--at",
                  "alloc:0x7fb75ffce200#2", gen)
    check(x == cmd and x["window"]["from_event"] == 68 and x["job"] == "inference" and
          x["user_categories"][0]["name"] == "cache",
          "explain(at=, categories=) is the command's answer")
    s = f.stats(category="gen=generation/utils")
    check(s["user_categories_at_peak"][0]["name"] == "gen", "stats(category=)")
    try:
        f.explain(category="no equals sign")
        check(False, "a bad category raises")
    except memsnap.MemsnapError as e:
        check(e.code == 2 and "category=" in str(e) and "--category" not in str(e),
              "a bad category: MemsnapError, code 2, named as the library takes it: %s" % e)
    try:
        f.stats(at="alloc:0x1#2", to="5")
        check(False, "at with to raises")
    except memsnap.MemsnapError as e:
        check(e.code == 2, "at with to: MemsnapError, code 2")

print("%d failed" % fails)
sys.exit(1 if fails else 0)
