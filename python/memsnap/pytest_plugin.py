"""GPU memory per test: a pytest plugin over one memsnap trace of the session.

    pytest --memsnap                       # a table of the tests with the highest peaks
    @pytest.mark.gpu_memory(max_reserved="4GiB", max_allocated="3GiB")
    def test_train_step(): ...

Found through the pytest11 entry point of memsnap's installed metadata (with memsnap's Python
folder on the path), or loaded with `pytest -p memsnap.pytest_plugin`. Without --memsnap it
registers the marker and does nothing else: it loads no library and records nothing.

With --memsnap the session is recorded into one trace (PyTorch's caching allocator through
memsnap's recorder, as memsnap.record() does; Python stacks with --memsnap-stacks). Each test
is a phase of the trace, "pytest NODEID", from the start of its setup to the end of its call:
a window (docs/REPLAY.md, "Windows"). Per test and device: the peak of reserved and allocated
bytes inside its window, and their rise over what was reserved and allocated at its start (the
cache that earlier tests left carries over; --memsnap-empty-cache empties it before each test).
A test marked gpu_memory(...) is judged when its call ends, by memsnap's check over its window,
and fails with what was exceeded and what held the memory at its peak. After the run: the tests
with the highest peaks, and with --memsnap-baseline FILE each test's peaks against a stored
baseline (--memsnap-save-baseline FILE writes one), growth over --memsnap-max-growth PCT failing
the run.

The figures are PyTorch's allocator's. Memory outside it (the CUDA context, NCCL's buffers, other
libraries) is measured only where the recorder marks the device's free memory (as recording
starts, at each step); its raw CUDA calls are seen only with pytest run under `memsnap record`. Without PyTorch and CUDA the plugin
records only the events the tests give the recorder's C API themselves (memsnap.record_events).
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

PHASE = "pytest "  # each test's phase: "pytest NODEID"
MARKER = ("gpu_memory(max_reserved=None, max_allocated=None, max_growth_per_step=None, "
          "allow_oom=False): fail the test where its GPU memory exceeds a budget (memsnap; "
          "needs pytest --memsnap). Sizes as memsnap reads them: \"4GiB\", \"512MB\", bytes.")
_FLAGS = (("--allow-oom", "gpu_memory(allow_oom=True)"), ("max_peak_reserved", "max_reserved"),
          ("max_peak_allocated", "max_allocated"))
_BUDGETS = {"max_reserved": "max_peak_reserved", "max_allocated": "max_peak_allocated",
            "max_growth_per_step": "max_growth_per_step"}


def pytest_addoption(parser):
    g = parser.getgroup("memsnap", "GPU memory per test (memsnap)")
    g.addoption("--memsnap", action="store_true",
                help="record the session's GPU memory with memsnap: peaks per test, "
                     "gpu_memory budgets, a table of the highest")
    g.addoption("--memsnap-stacks", action="store_true",
                help="record each allocation's Python stack (with --memsnap)")
    g.addoption("--memsnap-dir", metavar="DIR",
                help="keep the session's trace in DIR, and a memsnap render page for each test "
                     "over its budget")
    g.addoption("--memsnap-baseline", metavar="FILE",
                help="compare each test's peaks with FILE (written by --memsnap-save-baseline)")
    g.addoption("--memsnap-save-baseline", metavar="FILE",
                help="write each test's peaks to FILE, a baseline for later runs")
    g.addoption("--memsnap-max-growth", metavar="PCT", default=None,
                help="with --memsnap-baseline: growth of a test's peak over it that fails the "
                     "run (default 10%%)")
    g.addoption("--memsnap-empty-cache", action="store_true",
                help="torch.cuda.empty_cache() before each test (default: the cache carries "
                     "over, as in the job)")
    g.addoption("--memsnap-top", metavar="N", type=int, default=10,
                help="rows of the table of the tests with the highest peaks (default 10)")


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER)
    opt = config.getoption
    if not opt("memsnap"):
        for name in ("memsnap_stacks", "memsnap_dir", "memsnap_baseline",
                     "memsnap_save_baseline", "memsnap_max_growth", "memsnap_empty_cache"):
            if opt(name):
                raise pytest.UsageError(f"--{name.replace('_', '-')} needs --memsnap")
        if opt("memsnap_top") != 10:
            raise pytest.UsageError("--memsnap-top needs --memsnap")
        return
    if hasattr(config, "workerinput") or getattr(config.option, "numprocesses", None):
        raise pytest.UsageError("--memsnap records one process: not under pytest-xdist (-n)")
    config.pluginmanager.register(Session(config), "memsnap-session")


def _pct(text):
    try:
        v = float(str(text).rstrip("%"))
    except ValueError:
        v = -1.0
    if not v >= 0:
        raise pytest.UsageError(f"--memsnap-max-growth {text!r}: a percentage, e.g. 10 or 10%")
    return v


def _size(n):
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.2f} {unit}"
    return f"{n} bytes"


def _check_baseline(b):
    """ValueError where b is not a baseline as --memsnap-save-baseline writes one."""
    if not isinstance(b, dict) or b.get("memsnap_baseline") != 1:
        raise ValueError("not a memsnap baseline (memsnap_baseline: 1)")
    if not isinstance(b.get("tests"), dict):
        raise ValueError("no 'tests' object")
    for test, devs in b["tests"].items():
        if not isinstance(devs, dict):
            raise ValueError(f"{test}: not an object of devices")
        for dev, peaks in devs.items():
            ok = isinstance(peaks, dict) and dev.isdigit() and all(
                isinstance(peaks.get(k), int) and not isinstance(peaks.get(k), bool) and
                peaks.get(k) >= 0 for k in ("peak_reserved_bytes", "peak_allocated_bytes"))
            if not ok:
                raise ValueError(f"{test}, device {dev!r}: not {{peak_reserved_bytes, "
                                 "peak_allocated_bytes}} in bytes")


def _binary():
    """The memsnap command: $MEMSNAP, on PATH, or beside this package (P/bin of an
    installation, cli/ of a build tree laid out as one)."""
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 4)
    for c in (os.environ.get("MEMSNAP"), shutil.which("memsnap"),
              os.path.join(top, "bin", "memsnap"), os.path.join(top, "cli", "memsnap")):
        if c and os.access(c, os.X_OK):
            return c
    return None


def _per_device(answer):
    """A question's answer as {device: dict}: one device's object, or the device-keyed one."""
    if "devices" in answer and isinstance(answer["devices"], dict):
        return {int(d): v for d, v in answer["devices"].items()}
    return {int(answer.get("device", 0)): answer}


class Session:
    def __init__(self, config):
        self.config = config
        opt = config.getoption
        self.dir = opt("memsnap_dir")
        self.baseline = opt("memsnap_baseline")
        self.save = opt("memsnap_save_baseline")
        if opt("memsnap_max_growth") is not None and not self.baseline:
            raise pytest.UsageError("--memsnap-max-growth needs --memsnap-baseline")
        self.max_growth = _pct(opt("memsnap_max_growth") or "10")
        if opt("memsnap_top") < 1:
            raise pytest.UsageError("--memsnap-top: 1 or more")
        self.base = None
        if self.baseline:
            try:
                with open(self.baseline) as f:
                    self.base = json.load(f)
                _check_baseline(self.base)
            except (OSError, ValueError, AttributeError) as e:
                raise pytest.UsageError(f"--memsnap-baseline {self.baseline}: {e}") from None
        self.tmp = None
        self.trace = None
        self.source = None
        self.seen = {}      # nodeid -> times its phase was opened
        self.ran = set()    # tests whose call ran (a test skipped or failed in setup did not)
        self.failed = []    # (nodeid, n) of tests that failed on their own, without a budget
        self.failed_why = {}  # nodeid -> what held the memory, the OOM's verdict inside it
        self.open = None    # (nodeid, n, device) of the phase open now
        self.budget = {}    # nodeid -> failure lines of its budget, where it failed
        self.rows = []      # per test and device, after the run
        self.grown = []     # baseline lines over max_growth
        self.new = []       # tests without a baseline
        self.carried = []   # baseline lines whose growth came with the cache of earlier tests
        self.notes = []

    # --- recording -------------------------------------------------------------------------

    def pytest_sessionstart(self, session):
        import memsnap
        if self.dir:
            os.makedirs(self.dir, exist_ok=True)
            where = self.dir
        else:
            where = self.tmp = tempfile.mkdtemp(prefix="memsnap-pytest-")
        self.trace = os.path.join(where, "memsnap-session.zst")
        try:
            torch = None
            try:
                import torch  # noqa: F401
                cuda = torch.cuda.is_available()
            except ImportError:
                cuda = False
            if cuda:
                memsnap._on_start.append(self._reopen)
                memsnap.record(self.trace,
                               stacks="python" if self.config.getoption("memsnap_stacks")
                               else None)
                self.source = "torch"
            else:
                memsnap.record_events(self.trace)
                self.source = "c-api"
                self.notes.append("PyTorch with CUDA not found: recorded only the events the "
                                  "tests gave memsnap's recorder C API themselves")
        except (OSError, RuntimeError) as e:
            raise pytest.UsageError(f"memsnap: cannot record the session: {e}") from None

    def _reopen(self):
        """Recording began inside a test (PyTorch initialised CUDA there): its phase again."""
        if self.open:
            self._mark(0, self.open[0])

    def _mark(self, stage, nodeid):
        import memsnap
        memsnap._annotate(memsnap._ANN_PHASE, stage, PHASE + nodeid, 0)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        if self.config.getoption("memsnap_empty_cache") and self.source == "torch":
            import torch
            if torch.cuda.is_initialized():
                torch.cuda.empty_cache()
        n = self.seen[item.nodeid] = self.seen.get(item.nodeid, 0) + 1
        self.open = (item.nodeid, n)
        self._mark(0, item.nodeid)

    def _close(self):
        if self.open:
            self._mark(1, self.open[0])
            self.open = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rep = outcome.get_result()
        if not self.open or self.open[0] != item.nodeid:
            return
        if call.when == "setup" and rep.passed:
            return
        if call.when == "call":
            self.ran.add(item.nodeid)
            # a test run again (a rerun plugin): its last attempt is the one that counts
            self.budget.pop(item.nodeid, None)
            self.failed = [f for f in self.failed if f[0] != item.nodeid]
        n = self.open[1]
        self._close()  # the window ends with the call (or with a setup that did not pass)
        mark = item.get_closest_marker("gpu_memory")
        if call.when == "call" and rep.failed and mark is None:
            self.failed.append((item.nodeid, n))  # explained after the run
        if call.when != "call" or mark is None:
            return
        lines = self._judge(item.nodeid, n, mark)
        if not lines:
            return
        self.budget[item.nodeid] = lines
        text = "\n".join(lines)
        if rep.passed:
            rep.outcome = "failed"
            rep.longrepr = text
        else:
            rep.sections.append(("memsnap: GPU memory", text))

    # --- judging a test ----------------------------------------------------------------------

    def _judge(self, nodeid, n, mark):
        """The lines that fail the test's budget (empty: within it)."""
        import memsnap
        unknown = set(mark.kwargs) - set(_BUDGETS) - {"allow_oom"}
        if mark.args or unknown:
            return [f"gpu_memory: only keywords {sorted(_BUDGETS) + ['allow_oom']}, not "
                    f"{sorted(unknown) or list(mark.args)}"]
        where = f"mark:{PHASE}{nodeid}#{n}"
        opts = {"from": where, "to": where, "allow_cut_short": True,
                "allow_oom": bool(mark.kwargs.get("allow_oom", False))}
        for k, v in mark.kwargs.items():
            if k in _BUDGETS and v is not None:
                opts[_BUDGETS[k]] = v
        if not os.path.exists(self.trace) and self._nothing_allocated():
            return []  # recording starts with CUDA, which has not started: 0 is measured
        try:
            memsnap.flush()
            with memsnap.open(self.trace) as f:
                checked = _per_device(f.check(**opts))
                lines = []
                for dev, c in sorted(checked.items()):
                    for e in c["exceeded"]:
                        for flag, kw in _FLAGS:  # the marker's words for check's flags
                            e = e.replace(flag, kw)
                        lines.append(f"device {dev}: {e}")
                if lines:
                    lines += self._why(f, where, checked)
                return lines
        except memsnap.MemsnapError as e:
            if "no allocator events" in str(e) and self._nothing_allocated():
                return []  # recording, and PyTorch allocated nothing yet: 0 is measured
            if "no allocator events" in str(e):
                return ["gpu_memory: memsnap is not recording PyTorch's allocations (CUDA is "
                        "initialised, the recording did not begin), so the budget cannot be "
                        "judged"]
            msg = str(e)
            for flag, kw in _FLAGS:
                msg = msg.replace(flag, kw)
            return [f"gpu_memory: memsnap could not judge the budget: {msg}"]
        except OSError as e:  # the recorder could not write the trace
            return [f"gpu_memory: memsnap could not judge the budget: {e}"]

    def _nothing_allocated(self):
        """Whether a trace without events says that nothing was allocated: the recorder
        runs (or, for PyTorch, CUDA has not started, and it starts with it)."""
        import memsnap
        if memsnap.is_recording():
            return True
        if self.source == "torch":
            import torch
            return not torch.cuda.is_initialized()
        return False

    def _why(self, f, where, checked):
        """What held the memory at the test's peak, as explain breaks it down; a page of it."""
        out = []
        for dev, c in sorted(checked.items()):
            w = c.get("window") or {}
            out.append(f"device {dev}: events {w.get('from_event')} to {w.get('to_event')}: "
                       f"reserved {_size(w.get('reserved_bytes_at_start', 0))} at the start, "
                       f"peak {_size(c['peak_reserved_bytes'])} "
                       f"(+{_size(w.get('reserved_rise_bytes', 0))}); allocated "
                       f"{_size(w.get('allocated_bytes_at_start', 0))} at the start, peak "
                       f"{_size(c['peak_allocated_bytes'])} "
                       f"(+{_size(w.get('allocated_rise_bytes', 0))})")
        try:
            exp = _per_device(f.explain(**{"from": where, "to": where}))
        except Exception as e:  # noqa: BLE001 -- the budget's lines stand without it
            return out + [f"(explain could not break the peak down: {e})"]
        for dev, x in sorted(exp.items()):
            out += self._breakdown(dev, x)
            note = x.get("categories_note")
            if note:
                out.append(f"device {dev}: note: {note}")
        return out

    # --- after the run -------------------------------------------------------------------------

    def pytest_sessionfinish(self, session, exitstatus):
        import memsnap
        self._close()
        windows = {}
        try:
            memsnap.flush()
            if os.path.exists(self.trace) or not self._nothing_allocated():
                with memsnap.open(self.trace) as f:
                    windows = _per_device(f.replay(windows=PHASE))
            else:
                self.notes.append("no GPU allocation was recorded in the session")
        except memsnap.MemsnapError as e:
            if "no allocator events" in str(e):
                self.notes.append("no GPU allocation was recorded in the session")
            else:
                self.notes.append(f"the session's trace could not be read: {e}")
        except OSError as e:
            self.notes.append(f"the session's trace could not be written: {e}")
        last = {}
        for dev, r in sorted(windows.items()):
            for w in r.get("windows", []):
                if w["name"][len(PHASE):] not in self.ran:
                    continue  # skipped, or failed in its setup: it did not run
                last[(w["name"], dev)] = dict(test=w["name"][len(PHASE):], device=dev,
                                      peak_reserved_bytes=w["peak_reserved_bytes"],
                                      reserved_rise_bytes=w["reserved_rise_bytes"],
                                      peak_allocated_bytes=w["peak_allocated_bytes"],
                                      allocated_rise_bytes=w["allocated_rise_bytes"],
                                      closed=w["closed"], from_event=w["from_event"],
                                      to_event=w["to_event"], events=r.get("events_total", 0))
        self.rows = list(last.values())  # a test run again: its last run
        self._explain_failed()
        self._baseline(session)
        try:
            if self.save:
                self._save()
        except OSError as e:
            self.notes.append(f"no baseline written: {e}")
        self._pages()
        try:
            memsnap.stop()
        except OSError as e:
            self.notes.append(f"the session's trace could not be finished: {e}")

    def _explain_failed(self, most=5):
        """For the first tests that failed on their own: explain over each one's window, the
        verdict where the replay's first OOM lies inside it (a CUDA OOM the test died of),
        and what held the memory at its peak."""
        import memsnap
        if not self.failed or not self.rows:
            return
        try:
            f = memsnap.open(self.trace)
        except memsnap.MemsnapError:
            return
        with f:
            for test, n in self.failed[:most]:
                where = f"mark:{PHASE}{test}#{n}"
                try:
                    exp = _per_device(f.explain(**{"from": where, "to": where}))
                except memsnap.MemsnapError as e:
                    self.failed_why[test] = [f"explain could not read it: {e}"]
                    continue
                lines = []
                for dev, x in sorted(exp.items()):
                    w, oom = x.get("window") or {}, x.get("oom") or {}
                    if oom and w and w["from_event"] <= oom.get("event", -1) < w["to_event"]:
                        lines.append(f"device {dev}: {x['verdict']}")
                    lines += [ln for ln in self._breakdown(dev, x)]
                self.failed_why[test] = lines
        if len(self.failed) > most:
            self.notes.append(f"{len(self.failed) - most} more failed tests not explained")

    def _breakdown(self, dev, x):
        """explain's categories at the window's peak and its largest activations' sites."""
        out = []
        cats = {k: v for k, v in (x.get("categories") or {}).items()
                if isinstance(v, int) and v > 0}
        if cats:
            out.append(f"device {dev}: at the test's peak: " +
                       ", ".join(f"{k} {_size(v)}" for k, v in cats.items()))
        for a in ((x.get("peak") or {}).get("holders") or [])[:5]:
            out.append(f"device {dev}:   {_size(a['bytes'])} in {a['allocations']} "
                       f"allocation(s) at {a.get('label') or a.get('site') or '(no stack recorded: --memsnap-stacks)'}")
        return out

    def _key(self, row):
        return row["test"], str(row["device"])

    def _baseline(self, session):
        if self.base is None:
            return
        base = self.base["tests"]
        for row in self.rows:
            test, dev = self._key(row)
            b = base.get(test, {}).get(dev)
            if b is None:
                self.new.append(f"{test} (device {dev})")
                continue
            for k, rise in (("peak_reserved_bytes", "reserved_rise_bytes"),
                            ("peak_allocated_bytes", "allocated_rise_bytes")):
                old, now = b.get(k), row[k]
                if not old:
                    continue
                grew = 100.0 * (now - old) / old
                if grew <= self.max_growth:
                    continue
                line = (f"{test} (device {dev}): {k[:-6].replace('_', ' ')} {_size(old)} -> "
                        f"{_size(now)}, {grew:+.1f}% (more than {self.max_growth:g}%)")
                # its own rise did not grow: what earlier tests left carried it up
                if rise in b and row[rise] <= b[rise] * (1 + self.max_growth / 100.0):
                    self.carried.append(line + ", its own rise within it: from earlier tests")
                else:
                    self.grown.append(line)
        if self.grown:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _save(self):
        tests = {}
        for row in self.rows:
            test, dev = self._key(row)
            tests.setdefault(test, {})[dev] = {k: row[k] for k in
                                               ("peak_reserved_bytes", "peak_allocated_bytes",
                                                "reserved_rise_bytes", "allocated_rise_bytes")}
        tmp = self.save + ".tmp"
        with open(tmp, "w") as f:  # whole or not at all
            json.dump({"memsnap_baseline": 1, "tests": tests}, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, self.save)

    def _pages(self):
        """A page of each test over its budget, its window drawn (--memsnap-dir)."""
        if not self.dir or not self.budget:
            return
        exe = _binary()
        if not exe:
            self.notes.append("no memsnap command found ($MEMSNAP, PATH): no page drawn")
            return
        for row in self.rows:
            if row["test"] not in self.budget:
                continue
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", row["test"]).strip("_")[:120]
            tag = hashlib.sha1(row["test"].encode()).hexdigest()[:8]  # names that sanitise alike
            page = os.path.join(self.dir, f"{name}.{tag}.device{row['device']}.html")
            # a test without events of its own: the page from its start on
            to = max(row["to_event"], row["from_event"] + 1)
            if to > row["events"]:
                self.notes.append(f"no page for {row['test']}: no event from its start on")
                continue
            p = subprocess.run([exe, "-q", "render", "--device", str(row["device"]), "--from",
                                str(row["from_event"]), "--to", str(to), "-o", page,
                                self.trace], capture_output=True, text=True)
            if p.returncode:
                self.notes.append(f"no page for {row['test']}: {p.stderr.strip()}")

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        tr.write_sep("=", "memsnap: GPU memory per test")
        top = self.config.getoption("memsnap_top")
        rows = sorted(self.rows, key=lambda r: -r["peak_reserved_bytes"])[:top]
        if rows:
            tr.write_line(f"{'peak reserved':>14} {'rise':>12} {'peak allocated':>15} "
                          f"{'rise':>12}  device  test")
            for r in rows:
                tr.write_line(f"{_size(r['peak_reserved_bytes']):>14} "
                              f"{'+' + _size(r['reserved_rise_bytes']):>12} "
                              f"{_size(r['peak_allocated_bytes']):>15} "
                              f"{'+' + _size(r['allocated_rise_bytes']):>12}  "
                              f"{r['device']:>6}  {r['test']}"
                              f"{'' if r['closed'] else ' (did not finish)'}")
            if len(self.rows) > len(rows):
                tr.write_line(f"({len(self.rows) - len(rows)} more; --memsnap-top N)")
        for test, lines in self.budget.items():
            tr.write_line(f"over budget: {test}: {lines[0]}")
        for test, lines in self.failed_why.items():
            tr.write_line(f"failed: {test}:")
            for ln in lines:
                tr.write_line(f"    {ln}")
        for g in self.grown:
            tr.write_line(f"grew over the baseline: {g}")
        for g in self.carried:
            tr.write_line(f"higher than the baseline: {g}")
        if self.new:
            tr.write_line(f"not in the baseline ({len(self.new)}): " + ", ".join(self.new[:10]) +
                          (" ..." if len(self.new) > 10 else ""))
        if self.save:
            tr.write_line(f"baseline written: {self.save}")
        for n in self.notes:
            tr.write_line(f"note: {n}")
        tr.write_line("note: the figures are PyTorch's allocator's; memory outside it (the CUDA "
                      "context, NCCL, other libraries) is measured only at the device's free-"
                      "memory marks, and its raw CUDA calls are seen only with pytest run under "
                      "`memsnap record`")
        if self.dir:
            tr.write_line(f"trace: {self.trace}")
        if self.grown:
            tr.write_line(f"memsnap: the run fails: {len(self.grown)} peak(s) grew over the "
                          f"baseline by more than {self.max_growth:g}%", red=True, bold=True)

    def pytest_unconfigure(self, config):
        import memsnap
        if self._reopen in memsnap._on_start:
            memsnap._on_start.remove(self._reopen)
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
