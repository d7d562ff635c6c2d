# A snapshot that does not record its settings (PyTorch 2.2 and older, torch_npu, the list of
# torch.cuda.memory_snapshot()) but whose trace maps expandable segments ran under
# expandable_segments:True: replay, verify and explain use it, and say where it came from.
# The inputs are real recordings made under that setting, rewritten in PyTorch 2.2's layout by
# scripts/as_2_2_layout.py (no allocator_settings). Checked against what PyTorch reported
# (truth.json) and against the recommendations: expandable_segments:True, which the job had,
# is not one.
d=$(mktemp -d)
python3 scripts/as_2_2_layout.py testdata/snapshots/dynamic_expandable.pickle.zst "$d/dyn.pickle"
python3 - "$d" <<'PY'
import pickle, sys
snap = pickle.load(open(sys.argv[1] + "/dyn.pickle", "rb"))   # our own file, just written
with open(sys.argv[1] + "/list.pickle", "wb") as f:             # memory_snapshot()'s list
    pickle.dump(snap["segments"], f, protocol=4)
PY
"$MEMSNAP" info --json "$d/dyn.pickle" | python3 -c '
import json, sys; i = json.load(sys.stdin)
print("info: settings_recorded", i["settings_recorded"], "expandable_segments_seen", i["expandable_segments_seen"])'
"$MEMSNAP" info "$d/dyn.pickle" | grep "alloc conf"
"$MEMSNAP" -q verify "$d/dyn.pickle" | sed "s|$d/||"
echo "verify: exit ${PIPESTATUS[0]}"
"$MEMSNAP" -q replay --json "$d/dyn.pickle" >"$d/r.json"
python3 - "$d/r.json" testdata/snapshots/dynamic_expandable.truth.json <<'PY'
import json, sys
r, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
r = r[0] if isinstance(r, list) else r
ms = r["memory_stats"]
print("replay:", r["alloc_conf"], "recorded", r["settings_recorded"], "seen", r["expandable_segments_seen"])
for k in ("reserved_bytes.all.peak", "allocated_bytes.all.peak", "num_device_alloc"):
    print(f"  {k}: replay {ms[k]}, PyTorch {t['stats'][k]}, {'equal' if ms[k] == t['stats'][k] else 'DIFFERENT'}")
PY
"$MEMSNAP" -q replay "$d/dyn.pickle" | head -1 | sed "s|$d/||"
"$MEMSNAP" -q explain --json "$d/dyn.pickle" | python3 -c '
import json, sys; e = json.load(sys.stdin)
print("explain recommends:", [r["alloc_conf"] for r in e["recommendations"]])
# 40 iterations over changing shapes, without annotations in this layout: no steps made up
print("steps:", e["steps_from"], len(e["steps"]))'
"$MEMSNAP" -q explain "$d/dyn.pickle" | grep "least memory"
"$MEMSNAP" -q whatif "$d/dyn.pickle" | grep "seen in the trace" | cut -c1-60
# the same with its settings: nothing is seen, the recorded string is used
"$MEMSNAP" -q replay --json testdata/snapshots/dynamic_expandable.pickle.zst | python3 -c '
import json, sys; r = json.load(sys.stdin); r = r[0] if isinstance(r, list) else r
print("recorded:", r["alloc_conf"], "recorded", r["settings_recorded"], "seen", r["expandable_segments_seen"])'
# converted, the trace keeps it (format 1.4)
"$MEMSNAP" -q convert "$d/dyn.pickle" -o "$d/dyn.zst"
"$MEMSNAP" -q verify "$d/dyn.zst" | sed "s|$d/||"
# the end state alone (a list of segments with is_expandable)
"$MEMSNAP" info --json "$d/list.pickle" | python3 -c '
import json, sys; i = json.load(sys.stdin)
print("list: settings_recorded", i["settings_recorded"], "expandable_segments_seen", i["expandable_segments_seen"])'
rm -rf "$d"
