#!/bin/bash
# memsnap's pytest plugin on a GPU: the suite in pytest_suite/ under pytest --memsnap, its
# per-test peaks (--memsnap-save-baseline) against PyTorch's own memory_stats() for each test
# (conftest.py), and the budgets: the test over its reserved budget, the one whose steps grow,
# fail; the rest pass. PYTEST_PATH: where Debian's pytest is unpacked, if the machine has none.
# usage: tests/gpu/pytest_plugin.sh BUILD_DIR OUT_DIR
set -uo pipefail
build=$(cd "$1" && pwd) out=$2
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export PYTHONPATH=$build/lib/memsnap/python${PYTEST_PATH:+:$PYTEST_PATH}
export MEMSNAP=$build/cli/memsnap MEMSNAP_TRUTH=$out/truth.json
if ! "$py" -c 'import pytest' 2>/dev/null; then
	echo "SKIP: no pytest (set PYTEST_PATH to an unpacked python3-pytest)"; exit 77
fi
cd "$here/pytest_suite" || exit 1
# with Python stacks: the failures name the suite's own lines
"$py" -m pytest -p no:cacheprovider -q -rfE --memsnap --memsnap-stacks --memsnap-dir "$out/dir" \
	--memsnap-save-baseline "$out/baseline.json" test_gpu_suite.py >"$out/pytest.txt" 2>&1
code=$?
cat "$out/pytest.txt"
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ $code -eq 1 ] && pass "pytest exits 1 (tests failed)" || fail "pytest exit $code"
for t in test_over_budget test_steps_grow; do
	grep -q "^FAILED test_gpu_suite.py::$t" "$out/pytest.txt" && pass "$t fails" ||
		fail "$t does not fail"
done
n=$(grep -c '^FAILED' "$out/pytest.txt")
[ "$n" = 2 ] && pass "no other test fails" || fail "$n tests failed"
grep -q 'peak reserved .* exceeds the budget of 256.00 MiB' "$out/pytest.txt" &&
	pass "the reserved budget's line" || fail "no line for the reserved budget"
grep -q 'allocation(s) at .*test_gpu_suite.py:[0-9]' "$out/pytest.txt" &&
	pass "the holders at a failing test's peak are the suite's lines" ||
	fail "no site of the suite in the failures"
grep -q 'growth 8.00 MiB a step .* exceeds the budget of .* a step' "$out/pytest.txt" &&
	pass "the growth budget's line" || fail "no line for the growth budget"
# each test's peaks and start against PyTorch's own, byte for byte
"$py" - "$out/baseline.json" "$out/truth.json" "$out/dir/memsnap-session.zst" "$MEMSNAP" <<'PY'
import json, subprocess, sys
base, truth = json.load(open(sys.argv[1]))["tests"], json.load(open(sys.argv[2]))["tests"]
w = json.loads(subprocess.run([sys.argv[4], "-q", "replay", "--json", "--windows", "pytest ",
                               sys.argv[3]], capture_output=True, text=True).stdout)["windows"]
bad = 0
for test, t in sorted(truth.items()):
    got = [x for x in w if x["name"] == "pytest " + test]
    b = base.get(test, {}).get("0", {})
    g = got[-1] if got else {}
    for k in ("peak_reserved_bytes", "peak_allocated_bytes", "reserved_bytes_at_start",
              "allocated_bytes_at_start"):
        mine = b.get(k, g.get(k))
        ok = mine == t.get(k)
        bad += not ok
        print("%s: %s %s: memsnap %s, PyTorch %s" % ("PASS" if ok else "FAIL", test, k, mine,
                                                     t.get(k)))
sys.exit(1 if bad else 0)
PY
[ $? -eq 0 ] || fails=$((fails + 1))
ls "$out/dir"/*.html >/dev/null 2>&1 && pass "pages of the tests over budget" ||
	fail "no page in --memsnap-dir"
cp "$out/dir/memsnap-session.zst" "$out/session.zst" # the recording, beside its truth
echo "fails: $fails"
[ $fails -eq 0 ]
