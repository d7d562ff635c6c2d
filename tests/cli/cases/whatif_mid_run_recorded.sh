# A trace that starts mid-run and ran to its end with no OOM: its own settings' row survives
# ("yes" is what the job did: its truth has no OOM), while the other settings, whose replays start
# from a rebuilt state, stay unknown.
f=testdata/snapshots/real/late_history.pickle.zst
"$MEMSNAP" -q whatif --json "$f" >"$TMPDIR/w.json"
python3 - testdata/snapshots/real/late_history.truth.json "$TMPDIR/w.json" <<'PY'
import json, sys
t, w = (json.load(open(p)) for p in sys.argv[1:])
print("truth: OOM", t["oom"], "; starts mid-run", w["starts_mid_run"])
for s in w["settings"]:
    print(s["alloc_conf"] or "(recorded)", s["survives"])
PY
