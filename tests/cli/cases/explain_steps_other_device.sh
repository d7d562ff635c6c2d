# One process over two devices: PyTorch stamps every Optimizer.step annotation with the current
# device, and a snapshot keeps each device's events apart. Made from a real one-device training
# snapshot (AdamW) by moving its events and segments to device 1 and leaving its annotations on
# device 0: explain places them among device 1's events by their times and tells the same steps
# and the same categories as on the original.
zstd -qdc testdata/snapshots/explain/adamw.pickle.zst >"$TMPDIR/a.pickle"
python3 - "$TMPDIR/a.pickle" "$TMPDIR/moved.pickle" <<'PY'
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
d["device_traces"] = [[], d["device_traces"][0]]
for s in d["segments"]:
    s["device"] = 1
assert all(a["device"] == 0 for a in d["external_annotations"])
pickle.dump(d, open(sys.argv[2], "wb"))
PY
"$MEMSNAP" -q explain --json "$TMPDIR/a.pickle" >"$TMPDIR/a.json"
"$MEMSNAP" -q explain --json --device 1 "$TMPDIR/moved.pickle" >"$TMPDIR/m.json"
python3 - "$TMPDIR/a.json" "$TMPDIR/m.json" <<'PY'
import json, sys
a, m = (json.load(open(p)) for p in sys.argv[1:])
print("device", m["device"], "| steps on another device:", m["state"]["steps_annotated_on_another_device"],
      "| placed by time:", m["state"]["steps_placed_by_time"])
print("steps:", len(a["steps"]), "original,", len(m["steps"]), "moved")
print("categories at the peak as on the original:", a["categories"] == m["categories"])
PY
