"""The pytest plugin (python/memsnap/pytest_plugin.py) run as users run it: pytest in a fresh
process on a small suite (inner/), with memsnap's Python folder on the path, found through the
pytest11 entry point of its metadata. The suite's tests give memsnap's recorder their events
through its C API, so this runs without a GPU; tests/gpu/pytest_suite runs it on one.

Run by ctest (pytest_plugin) with PYTHONPATH at the build tree's Python folder and MEMSNAP at
the memsnap command."""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
INNER = os.path.join(HERE, "inner")


def run(tmp_path, *args, env=None):
    e = dict(os.environ, **(env or {}))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "--rootdir", INNER, *args, os.path.join(INNER, "test_suite.py")],
                       cwd=tmp_path, env=e, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def test_found_through_the_entry_point(tmp_path):
    code, out = run(tmp_path, "--help")
    assert code == 0 and "--memsnap-baseline" in out, out


def test_p_option(tmp_path):
    # -p memsnap.pytest_plugin: where the metadata is on the path too (the same plugin, once),
    # and where only the package is (the source tree's python/)
    code, out = run(tmp_path, "-p", "memsnap.pytest_plugin", "--help")
    assert code == 0 and "--memsnap-baseline" in out, out
    src = os.path.join(HERE, os.pardir, os.pardir, "python")
    code, out = run(tmp_path, "-p", "memsnap.pytest_plugin", "--help", env={"PYTHONPATH": src})
    assert code == 0 and "--memsnap-baseline" in out, out
    code, out = run(tmp_path, "-p", "no:memsnap.pytest_plugin", "--help")
    assert code == 0 and "--memsnap" not in out, out


def test_nothing_without_memsnap(tmp_path):
    # the budgets are not judged and no library is loaded (test_no_library_without_memsnap)
    code, out = run(tmp_path, "-k", "not oom_not")
    assert code == 0, out
    assert "memsnap: GPU memory per test" not in out


def test_budgets_and_table(tmp_path):
    code, out = run(tmp_path, "--memsnap", "--memsnap-dir", str(tmp_path / "d"))
    assert code == 1, out
    failed = sorted(re.findall(r"^FAILED \S+::(\w+)", out, re.M))
    assert failed == ["test_dies_of_oom", "test_leaks", "test_oom_not_allowed",
                      "test_over_budget"], out
    # a test that failed on its own, of an OOM inside it: the verdict on that OOM
    assert re.search(r"failed: test_suite.py::test_dies_of_oom:\n +device 0: Out of memory at "
                     r"event \d+", out), out
    # what was exceeded, by how much, and the window's figures
    assert "device 0: peak reserved 120.00 MiB exceeds the budget of 64.00 MiB" in out
    assert "reserved 20.00 MiB at the start, peak 120.00 MiB (+100.00 MiB)" in out
    assert "device 0: peak allocated 16.00 MiB exceeds the budget of 10.00 MiB" in out
    assert "ran out of memory (1 recorded OOM; gpu_memory(allow_oom=True) passes it)" in out
    # the table, highest peak first, with the rises over each test's start
    rows = re.findall(r"^ +([\d.]+ \w+) +\+([\d.]+ \w+) +([\d.]+ \w+) +\+([\d.]+ \w+) +0 +"
                      r"test_suite.py::(\w+)", out, re.M)
    assert rows[0] == ("120.00 MiB", "100.00 MiB", "100.00 MiB", "100.00 MiB",
                       "test_over_budget"), rows
    assert ("20.00 MiB", "20.00 MiB", "2.00 MiB", "2.00 MiB", "test_small") in rows, rows
    assert len(rows) == 9, rows
    assert ("0 bytes", "0 bytes", "0 bytes", "0 bytes", "test_before_any_event") in rows, rows
    assert "seen only with pytest run under `memsnap record`" in out
    # the trace kept, and a page of each test over its budget
    pages = sorted(re.sub(r"\.[0-9a-f]{8}\.", ".", p) for p in os.listdir(tmp_path / "d"))
    assert pages == ["memsnap-session.zst", "test_suite.py_test_leaks.device0.html",
                     "test_suite.py_test_oom_not_allowed.device0.html",
                     "test_suite.py_test_over_budget.device0.html"], pages


def test_baseline(tmp_path):
    base = tmp_path / "base.json"
    code, out = run(tmp_path, "--memsnap", "--memsnap-save-baseline", str(base), "-k",
                    "small or within")
    assert code == 0 and "baseline written" in out, out
    b = json.load(open(base))
    assert b["tests"]["test_suite.py::test_small"]["0"] == {
        "peak_allocated_bytes": 2 << 20, "peak_reserved_bytes": 20 << 20,
        "allocated_rise_bytes": 2 << 20, "reserved_rise_bytes": 20 << 20}, b
    # the same run again: within; twice the memory: over 10%, the run fails; a new test listed
    code, out = run(tmp_path, "--memsnap", "--memsnap-baseline", str(base), "-k",
                    "small or within")
    assert code == 0 and "grew over the baseline" not in out, out
    code, out = run(tmp_path, "--memsnap", "--memsnap-baseline", str(base),
                    "--memsnap-max-growth", "5%", "-k", "small or within or leaks",
                    env={"INNER_SCALE": "2"})
    assert code == 1 and "memsnap: the run fails: 2 peak(s) grew" in out, out
    assert re.search(r"grew over the baseline: test_suite.py::test_within_budget \(device 0\): "
                     r"peak allocated 30.00 MiB -> 76.00 MiB, \+153.3% \(more than 5%\)", out), out
    assert "FAILED" in out and "test_leaks" in out  # its own budget, not the baseline's
    assert "not in the baseline (1): test_suite.py::test_leaks (device 0)" in out, out


def test_skipped_and_malformed(tmp_path):
    # a test skipped in its setup has no row; a baseline of the wrong shape is a usage error
    code, out = run(tmp_path, "--memsnap", "-k", "small", env={"INNER_SKIP": "1"})
    assert code == 0 and "test_small" not in out.split("GPU memory per test")[1], out
    for bad in ('{"memsnap_baseline": 1, "tests": {"t": {"0": 7}}}',
                '{"memsnap_baseline": 1, "tests": {"t": {"0": {"peak_reserved_bytes": "x"}}}}',
                '{"tests": {}}'):
        (tmp_path / "b.json").write_text(bad)
        code, out = run(tmp_path, "--memsnap", "--memsnap-baseline", str(tmp_path / "b.json"))
        assert code == 4 and "b.json" in out and "INTERNALERROR" not in out, out


def test_usage_errors(tmp_path):
    code, out = run(tmp_path, "--memsnap-dir", str(tmp_path))
    assert code == 4 and "--memsnap-dir needs --memsnap" in out, out
    code, out = run(tmp_path, "--memsnap-top", "2")
    assert code == 4 and "--memsnap-top needs --memsnap" in out, out
    code, out = run(tmp_path, "--memsnap", "--memsnap-max-growth", "5")
    assert code == 4 and "--memsnap-max-growth needs --memsnap-baseline" in out, out
    (tmp_path / "bad.json").write_text("{")
    code, out = run(tmp_path, "--memsnap", "--memsnap-baseline", str(tmp_path / "bad.json"))
    assert code == 4 and "bad.json" in out, out
