#!/usr/bin/env python3
"""explain's breakdown by compile context against what Mosaic's own tests expect.

usage: mosaic.py MEMSNAP SNAPSHOT
SNAPSHOT is Mosaic's test snapshot (facebookresearch/mosaic, test/snapshots/output.pickle; in
../shared/testdata/wild). Its tests (test/test_cmds.py, test_memory_profile_compile_context)
state the bytes of each compile context at the peak of its allocations: context1 528274631,
context2 1212434191, context3 514689310; and of its custom rules (test_memory_profile_custom)
"all_allocations" = ".*" 2255398132 bytes and "specific_pattern" = "nonexistent_pattern" 0, as
user categories (--category). Mosaic counts the trace's allocations only: what was allocated
before the trace (context not known: null; no frames to match) is left out here. Exit 1 on a
difference.
"""
import json
import subprocess
import sys

EXPECTED = {"context1": 528274631, "context2": 1212434191, "context3": 514689310}

r = json.loads(subprocess.run([sys.argv[1], "explain", "--json", sys.argv[2]], check=True,
                              capture_output=True, text=True).stdout)
got = {c["context"]: c["bytes"] for c in r["compile_contexts"] or [] if c["context"]}
ok = got == EXPECTED
print(("PASS" if ok else "FAIL:"), "compile contexts at the peak", got, "vs Mosaic's", EXPECTED)

CUSTOM = {"all_allocations": 2255398132, "specific_pattern": 0}
r = json.loads(subprocess.run([sys.argv[1], "explain", "--json", "--category", "all_allocations=.*",
                               "--category", "specific_pattern=nonexistent_pattern", sys.argv[2]],
                              check=True, capture_output=True, text=True).stdout)
got = {u["name"]: u["bytes"] for u in r["user_categories"] or []}
ok2 = got == CUSTOM
print(("PASS" if ok2 else "FAIL:"), "user categories at the peak", got, "vs Mosaic's", CUSTOM)
sys.exit(0 if ok and ok2 else 1)
