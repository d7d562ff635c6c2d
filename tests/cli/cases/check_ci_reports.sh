# check for a CI job: --format markdown (the job page's summary: each gate against its value,
# reserved memory over the run) and --junit FILE (a test case per gate and device, a failure per
# gate that failed), parsed back here against the gates of --json; exit codes as before.
s=testdata/snapshots/dynamic_oom.pickle
"$MEMSNAP" -q check --format markdown --max-peak-reserved 10GiB --max-fragmentation 0.2 \
	--junit "$TMPDIR/j.xml" "$s"
echo "exit $?"
"$MEMSNAP" -q check --json --max-peak-reserved 10GiB --max-fragmentation 0.2 "$s" >"$TMPDIR/c.json"
python3 - "$TMPDIR/j.xml" "$TMPDIR/c.json" <<'PY'
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
gates = json.load(open(sys.argv[2]))["gates"]
cases = root.findall("./testsuite/testcase")
print("junit:", root.get("tests"), "tests,", root.get("failures"), "failures")
print("same gates as --json:", [c.get("name") for c in cases] == [g["name"] for g in gates] and
      [c.find("failure") is None for c in cases] == [g["passed"] for g in gates])
PY
# two devices: a row of gates each, one JUnit class each; a run that passes
"$MEMSNAP" -q check --format markdown --junit "$TMPDIR/two.xml" testdata/snapshots/multi_gpu/pipeline.pickle.zst |
	grep -E '^\| [0-9]|passed|failed'
echo "exit $?"
grep -o 'classname="[^"]*" name="[^"]*"' "$TMPDIR/two.xml"
# --json is --format json; a JUnit file that cannot be written is an error, and nothing is left
"$MEMSNAP" -q check --json --format markdown "$s" >/dev/null 2>"$TMPDIR/usage.err"
echo "exit $?"
head -1 "$TMPDIR/usage.err"
"$MEMSNAP" -q check --junit "$TMPDIR/no/such/dir/j.xml" "$s" >/dev/null 2>"$TMPDIR/junit.err"
echo "exit $?"
sed "s|$TMPDIR|TMP|g" "$TMPDIR/junit.err"
ls "$TMPDIR/no" 2>/dev/null || echo "nothing written"
