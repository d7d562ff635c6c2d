# A real pytest session recorded by the plugin on a GPU (testdata/pytest/SOURCE.md): each test's
# window (replay --windows and stats --windows) against PyTorch's own memory_stats() of it
t=testdata/pytest/gpu_suite.zst
"$MEMSNAP" -q replay --json --windows 'pytest ' "$t" >"$TMPDIR/replay.json"
"$MEMSNAP" -q stats --json --windows 'pytest ' "$t" >"$TMPDIR/stats.json"
python3 - "$TMPDIR/replay.json" "$TMPDIR/stats.json" testdata/pytest/gpu_suite.truth.json <<'PY'
import json, sys
r, s, truth = (json.load(open(p)) for p in sys.argv[1:])
rw = {w["name"][len("pytest "):]: w for w in r["windows"]}
sw = {w["name"][len("pytest "):]: w for w in s["windows"]}
for test, t in sorted(truth["tests"].items()):
    w = rw[test]
    same = all(w[k] == t[k] for k in t)
    # stats has no model: reserved as the segment events say, requested not allocated
    same_s = all(sw[test][k] == t[k] for k in ("peak_reserved_bytes", "reserved_bytes_at_start"))
    print(test, "replay: PyTorch's" if same else "replay: DIFFERS %s" % w,
          "stats reserved: PyTorch's" if same_s else "stats: DIFFERS %s" % sw[test])
PY
