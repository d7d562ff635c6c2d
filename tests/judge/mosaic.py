#!/usr/bin/env python3
"""explain's breakdown by compile context against what Mosaic's own tests expect.

usage: mosaic.py MEMSNAP SNAPSHOT
SNAPSHOT is Mosaic's test snapshot (facebookresearch/mosaic, test/snapshots/output.pickle; in
../shared/testdata/wild). Its tests (test/test_cmds.py, test_memory_profile_compile_context)
state the bytes of each compile context at the peak of its allocations: context1 528274631,
context2 1212434191, context3 514689310; and of its custom rules (test_memory_profile_custom)
"all_allocations" = ".*" 2255398132 bytes and "specific_pattern" = "nonexistent_pattern" 0, as
user categories (--category); the peak in a time window (test_get_memory_usage_peak_with_time_range:
1759252605604106 to 1759252631649942 us, 202846821); the memory after a completed free
("2263c194bda7_0" free_completed: 1783600757; "32fa0599c7f59_0": 400913725, as --at free:ADDRESS)
and the peak before it (577984171, --to free:ADDRESS). Mosaic counts the trace's allocations
only: what was allocated before the trace (context not known: null; no frames to match; stats'
before_the_trace, 466 bytes, alive throughout) is left out here. Exit 1 on a difference.
"""
import io
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from snapshot_reader import Refuse, raw  # noqa: E402

EXPECTED = {"context1": 528274631, "context2": 1212434191, "context3": 514689310}

r = json.loads(subprocess.run([sys.argv[1], "explain", "--json", sys.argv[2]], check=True,
                              capture_output=True, text=True).stdout)
got = {c["context"]: c["bytes"] for c in r["compile_contexts"] or [] if c["context"]}
ok = got == EXPECTED
print(("PASS" if ok else "FAIL:"), "compile contexts at the peak", got, "vs Mosaic's", EXPECTED)

s = json.loads(subprocess.run([sys.argv[1], "stats", "--json", sys.argv[2]], check=True,
                              capture_output=True, text=True).stdout)
got = {c["context"]: c["bytes"] for c in s["compile_contexts_at_peak"] or [] if c["context"]}
ok = ok and got == EXPECTED
print(("PASS" if got == EXPECTED else "FAIL:"), "stats: compile contexts at the peak", got)

CUSTOM = {"all_allocations": 2255398132, "specific_pattern": 0}
r = json.loads(subprocess.run([sys.argv[1], "explain", "--json", "--category", "all_allocations=.*",
                               "--category", "specific_pattern=nonexistent_pattern", sys.argv[2]],
                              check=True, capture_output=True, text=True).stdout)
got = {u["name"]: u["bytes"] for u in r["user_categories"] or []}
ok2 = got == CUSTOM
print(("PASS" if ok2 else "FAIL:"), "user categories at the peak", got, "vs Mosaic's", CUSTOM)
fails = (not ok) + (not ok2)


def stats(*args):
    return json.loads(subprocess.run([sys.argv[1], "stats", "--json", *args, sys.argv[2]],
                                     check=True, capture_output=True, text=True).stdout)


def check(what, got, want):
    global fails
    print(("PASS" if got == want else "FAIL:"), what, got, "vs Mosaic's", want)
    fails += got != want


r = stats()
pre = r["before_the_trace"]["requested_bytes"]
# times count from the trace's first entry (PyTorch's time_us), read here without running code
t0 = min(e["time_us"] for e in Refuse(io.BytesIO(raw(sys.argv[2]))).load()["device_traces"][0])
w = stats("--from", f"{1759252605604106 - t0}us", "--to", f"{1759252631649942 - t0}us")
check("peak in the time window", w["windows"][0]["peak_requested_bytes"] - pre, 202846821)
for addr, want in (("0x2263c194bda7", 1783600757), ("0x32fa0599c7f59", 400913725)):
    w = stats("--at", f"free:{addr}")
    check(f"requested after free:{addr}", w["windows"][0]["requested_bytes_at_end"] - pre, want)
w = stats("--to", "free:0x32fa0599c7f59")
check("peak before free:0x32fa0599c7f59", w["windows"][0]["peak_requested_bytes"] - pre,
      577984171)
sys.exit(1 if fails else 0)
