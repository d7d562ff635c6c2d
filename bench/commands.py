#!/usr/bin/env python3
"""Whole commands as people run them: one fresh process per run, with the alternative in the same run.

    bench/commands.py MEMSNAP FILE... [--rounds N] [--out RESULT.md] [--only info,stats,...]

For each FILE (a plain snapshot pickle or a memsnap .zst trace) the runs take turns, ROUNDS rounds
(default 5), each run a new process:
  python    python3 -c 'pickle.load(open(FILE, "rb"))': what reading the snapshot costs in Python
            before any analysis (pickles only)
  info      memsnap info FILE
  stats     memsnap stats FILE
  replay    memsnap replay FILE
  render    memsnap render FILE -o page.html
  explain   memsnap explain FILE (its verdicts, the settings replayed and the least memory searched)
  whatif    memsnap whatif FILE
  trace_plot  pickle.load + torch.cuda._memory_viz.trace_plot + writing its page (PyTorch's own
            HTML view; pickles only, where PyTorch can be imported)
The file is read once before the first round, so the first run is a fresh process over a warm page
cache (what a second command on the same file sees), not a cold disk. Reported per command: the
first run, the median of all rounds, the lowest and highest, peak RSS (the largest of the rounds,
from wait4), and for info, stats and render the ratio of the alternative's median to memsnap's.
A command that exits with a status other than 0 (or 3, replay's "out of memory") is an error: the
table says so instead of a time. Events per second use the file's event count (memsnap info --json).

--against OLD_MEMSNAP runs each memsnap command with that binary too, in the same rounds, taking
turns ("before" rows, and the change of the median). --cpus 0,1 runs everything on those CPUs
only (taskset), as on a machine with that many cores.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PY_LOAD = "import pickle,sys\nwith open(sys.argv[1], 'rb') as f: pickle.load(f)"
TORCH_PLOT = (
    "import pickle,sys\nfrom torch.cuda import _memory_viz\n"
    "with open(sys.argv[1], 'rb') as f: d = pickle.load(f)\n"
    "open(sys.argv[2], 'w').write(_memory_viz.trace_plot(d))")


def run_once(argv):
    """(wall seconds, peak RSS bytes, exit status) of one fresh process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace").strip().splitlines()
    p.stderr.close()
    return wall, ru.ru_maxrss * 1024, p.returncode, (err[-1] if err else "")


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("memsnap")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", help="also write the table to this Markdown file")
    ap.add_argument("--against", help="a previous memsnap binary, run in the same rounds")
    ap.add_argument("--cpus", help="run everything on these CPUs (taskset -c LIST)")
    ap.add_argument("--only", default="python,info,stats,replay,render,explain,whatif,trace_plot",
                    help="comma-separated commands (default: all)")
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    only = set(a.only.split(","))
    ms = os.path.abspath(a.memsnap)
    have_torch = "trace_plot" in only and subprocess.run(
        [a.python, "-c", "import torch.cuda._memory_viz"], capture_output=True).returncode == 0
    tmp = tempfile.mkdtemp(prefix="memsnap-bench-")
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    say(f"# Whole commands, {time.strftime('%Y-%m-%d %H:%M %Z')}")
    say()
    say(f"{cpu_name()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; `{' '.join(sys.argv)}`; rounds {a.rounds}, "
        "one fresh process per run, the commands taking turns, page cache warm"
        + (f", on CPUs {a.cpus} only." if a.cpus else "."))
    pin = ["taskset", "-c", a.cpus] if a.cpus else []
    old = os.path.abspath(a.against) if a.against else None
    try:
        for path in a.files:
            info = subprocess.run([ms, "info", "--json", path], capture_output=True, text=True)
            if info.returncode != 0:
                say(f"\n{path}: memsnap info failed: {info.stderr.strip()}")
                continue
            n_ev = json.loads(info.stdout).get("events_total", 0)
            pickle_in = not path.endswith(".zst")
            page = os.path.join(tmp, "page.html")
            cmds = {
                "python": [a.python, "-c", PY_LOAD, path] if pickle_in else None,
                "info": [ms, "info", path],
                "stats": [ms, "stats", path],
                "replay": [ms, "replay", path],
                "render": [ms, "render", path, "-o", page],
                "explain": [ms, "explain", path],
                "whatif": [ms, "whatif", path],
                "trace_plot": ([a.python, "-c", TORCH_PLOT, path, os.path.join(tmp, "torch.html")]
                               if pickle_in and have_torch else None),
            }
            cmds = {k: v for k, v in cmds.items() if v and k in only}
            if old:  # the previous binary's run of each memsnap command, right after it
                cmds = {kk: vv for k, v in cmds.items()
                        for kk, vv in ([(k, v)] + ([(k + " before", [old] + v[1:])]
                                                   if v[0] == ms else []))}
            cmds = {k: pin + v for k, v in cmds.items()}
            with open(path, "rb") as f:
                while f.read(1 << 24):
                    pass
            runs = {k: [] for k in cmds}
            rss = {k: 0 for k in cmds}
            fail = {}
            for _ in range(a.rounds):
                for k, argv in cmds.items():
                    if k in fail:
                        continue
                    wall, peak, rc, last = run_once(argv)
                    if rc not in (0, 3):
                        fail[k] = f"exit {rc}: {last}"
                        continue
                    runs[k].append(wall)
                    rss[k] = max(rss[k], peak)
            size = os.path.getsize(path)
            say()
            say(f"## {os.path.basename(path)}: {human(size)}, {n_ev} events")
            say()
            say("| command | first | median | range | peak RSS | against memsnap |")
            say("|---|---|---|---|---|---|")
            med = {k: statistics.median(v) for k, v in runs.items() if v}
            alt = {"info": "python", "stats": "python", "render": "trace_plot"}
            for k in cmds:
                if k in fail:
                    say(f"| {k} | error: {fail[k]} | | | | |")
                    continue
                v = runs[k]
                rate = f" ({n_ev / med[k] / 1e6:.1f} M events/s)" if k == "replay" and n_ev else ""
                vs = ""
                if k in alt and alt[k] in med:
                    vs = f"{alt[k]} {med[alt[k]] / med[k]:.1f}x slower"
                if k + " before" in med:
                    vs += (", " if vs else "") + \
                        f"{(med[k] / med[k + ' before'] - 1) * 100:+.1f}% against before"
                say(f"| {k} | {v[0] * 1e3:.0f} ms | {med[k] * 1e3:.0f} ms{rate} | "
                    f"{min(v) * 1e3:.0f} to {max(v) * 1e3:.0f} ms | {human(rss[k])} | {vs} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
