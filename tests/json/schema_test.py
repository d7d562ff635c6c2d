#!/usr/bin/env python3
"""Every command's --json against docs/schema/results.schema.json: the commands over the bundled
traces and snapshots (one device and several, OOMs, cut-short and mid-run traces, snapshots
without a trace, the options that add fields), and every golden stdout that is JSON. A result
with a field the schema does not name, or without one it requires, fails; so does a schema that
accepts a result broken on purpose.

usage: schema_test.py MEMSNAP SOURCE_DIR
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is missing: scripts/install-deps.sh --test installs it")
    sys.exit(1)

memsnap, src = sys.argv[1:3]
os.chdir(src)
schema = json.load(open("docs/schema/results.schema.json"))
V = jsonschema.Draft202012Validator
V.check_schema(schema)
fails = 0


def check(ok, what):
    global fails
    if not ok:
        print("FAIL", what)
    fails += not ok


def validator(command):
    return V({"$ref": "#/$defs/result_" + command, "$defs": schema["$defs"]})


def inputs():
    out = []
    for d in ("snapshots", "snapshots/devices", "snapshots/edge", "snapshots/explain",
              "snapshots/multi_gpu", "snapshots/pools", "snapshots/real", "snapshots/settings",
              "snapshots/verdicts", "snapshots/versions", "traces/*"):
        for f in sorted(glob.glob("testdata/%s/*" % d)):
            if os.path.isfile(f) and not f.endswith((".md", ".py", ".sh", ".txt")) and \
                    not re.search(r"(truth|env|expect|manifest)[^/]*\.json$", f):
                out.append(f)
    return out


files = inputs()
some = files[::4]
configs = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
configs.write("backend:cudaMallocAsync\nexpandable_segments:True\n")
configs.close()
mg = sorted(glob.glob("testdata/snapshots/multi_gpu/*.zst"))
jobs = []
for f in files:
    jobs += [["info", f], ["stats", f], ["replay", f], ["explain", f]]
for f in some:
    jobs += [["verify", f], ["whatif", f], ["check", f],
             ["check", "--max-peak-reserved", "1GiB", "--max-growth-per-step", "1MiB",
              "--max-fragmentation", "0.3", f],
             ["replay", "--limit", "1GiB", "--frames", "all", f], ["stats", "--frames", "all", f],
             ["explain", "--frames", "all", f], ["explain", "--request", "1GiB", f],
             ["whatif", "--configs", configs.name, f], ["diff", "--frames", "3", f, f]]
jobs += [["stats"] + mg[:4] + ["testdata/snapshots/edge/no_events.json",
                               "testdata/snapshots/edge/completions_only.json"],
         ["explain"] + mg[:3],
         ["explain", "testdata/snapshots/explain/frag_oom.zst",
          "testdata/snapshots/explain/frag_oom.pickle.zst"],
         ["diff", "testdata/snapshots/multi_gpu/ddp_rank0.zst",
          "testdata/snapshots/multi_gpu/ddp_rank1.zst"],
         ["diff", "testdata/snapshots/multi_gpu/pipeline.zst",
          "testdata/snapshots/multi_gpu/pipeline.pickle.zst"],
         ["check", "--baseline", "testdata/snapshots/multi_gpu/ddp_rank0.zst", "--max-growth",
          "1%", "testdata/snapshots/multi_gpu/ddp_rank1.zst"]]

# third-party and PyTorch 2.11 snapshots beside the project, where they are (not in CI)
shared = [f for d in ("wild", "torch-2.11")
          for f in sorted(glob.glob(os.path.join(src, "..", "shared", "testdata", d, "*")))
          if os.path.isfile(f) and not f.endswith((".md", ".json", ".py"))]
for k, f in enumerate(shared):
    jobs += [["info", f], ["stats", f], ["replay", f], ["replay", "--limit", "2GiB", f],
             ["verify", f], ["explain", f], ["whatif", f], ["check", f],
             ["diff", "--frames", "all", f, shared[k - 1]]]


def run(job):
    p = subprocess.run([memsnap, "-q", job[0], "--json"] + job[1:], capture_output=True,
                       text=True, timeout=300)
    return job, p.returncode, p.stdout


answered = {}
with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
    for job, rc, out in ex.map(run, jobs):
        if rc in (1, 2):  # the input cannot answer (a snapshot without a trace): no result
            check(not out.strip(), "%s: exit %d with output on stdout" % (" ".join(job), rc))
            continue
        try:
            result = json.loads(out)
        except ValueError:
            check(False, "%s: exit %d, stdout is no JSON" % (" ".join(job), rc))
            continue
        errors = sorted(validator(job[0]).iter_errors(result), key=lambda e: list(e.path))
        check(not errors, "%s: %s at %s" % (" ".join(job), errors[0].message[:300],
                                            "/".join(map(str, errors[0].path)))
              if errors else "")
        answered[job[0]] = answered.get(job[0], 0) + 1
os.unlink(configs.name)

# the goldens that are a result whole
goldens = 0
for f in sorted(glob.glob("tests/cli/cases/*.stdout.exact")):
    try:
        result = json.load(open(f))
    except ValueError:
        continue
    script = open(f[:-len(".stdout.exact")] + ".sh").read()
    m = re.search(r'"\$MEMSNAP"\s+(?:-q\s+)?([a-z]+)', script)
    if not m or m.group(1) not in ("info", "stats", "replay", "verify", "explain", "whatif",
                                   "check", "diff"):
        continue
    errors = list(validator(m.group(1)).iter_errors(result))
    check(not errors, "%s: %s" % (f, errors[0].message[:300] if errors else ""))
    goldens += 1

# the schema can fail: a result with a field renamed, and one with a required field gone
rc, out = run(["replay", "testdata/snapshots/dynamic_oom.pickle"])[1:]
good = json.loads(out)
renamed = dict(good)
renamed["requested"] = renamed.pop("recorded_ooms")
check(not validator("replay").is_valid(renamed), "the schema takes a renamed field")
check(not validator("replay").is_valid({k: v for k, v in good.items() if k != "trace"}),
      "the schema takes a result without its trace")
check(not validator("replay").is_valid(dict(good, schema_version=2)),
      "the schema takes schema_version 2")

print("%d results of %d commands (%s; %d inputs beside the project) and %d goldens against "
      "the schema: %d failed" % (sum(answered.values()), len(answered),
      ", ".join("%s %d" % kv for kv in sorted(answered.items())), len(shared), goldens, fails))
for c in ("info", "stats", "replay", "verify", "explain", "whatif", "check", "diff"):
    check(answered.get(c, 0) > 0, "no result of %s was validated" % c)
sys.exit(1 if fails else 0)
