# --from/--to: the window's peak is where the whole trace's timeline (one event per bucket)
# is highest inside the window, and the drawings start and stop at its edges
"$MEMSNAP" render --detail 10000 testdata/snapshots/dynamic_oom.pickle -o "$TMPDIR/full.html" 2>/dev/null || exit
"$MEMSNAP" render --from 1000 --to 3000 testdata/snapshots/dynamic_oom.pickle -o "$TMPDIR/w.html" 2>/dev/null || exit
"$MEMSNAP" render --from 1000 --to 3000 testdata/snapshots/dynamic_oom.pickle 2>/dev/null | head -2
"$MEMSNAP" render --from 1000 --to 3000 --at end testdata/snapshots/dynamic_oom.pickle 2>/dev/null | head -1
"$MEMSNAP" render --from 1000 --to 3000 --at 3000 testdata/snapshots/dynamic_oom.pickle 2>&1 | grep error
"$MEMSNAP" render --from 1000 --to 3000 --at oom testdata/snapshots/dynamic_oom.pickle 2>&1 | grep error
python3 - "$TMPDIR/full.html" "$TMPDIR/w.html" <<'PY'
import json, re, sys
def load(p):
    s = open(p, encoding="utf-8").read()
    return json.loads(re.search(r'<script id="memsnap-data" type="application/json"[^>]*>(.*?)</script>', s, re.S).group(1))
full, w = load(sys.argv[1]), load(sys.argv[2])
T = full["timeline"]
best = max((T["alloc_max"][i], -T["first"][i]) for i in range(len(T["first"])) if 1000 <= T["first"][i] < 3000)
print("whole trace, highest in the window:", best[0], "at", -best[1])
print("window report: peak", w["peak"]["allocated"], "at", w["peak"]["index"], "window", w["window"])
t = w["timeline"]
print("buckets from", t["first"][0], "to", t["last"][-1], "; moments from", w["moments"][0]["index"], "to", w["moments"][-1]["index"], "; oom", w["oom"])
PY
