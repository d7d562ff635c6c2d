# forward_frames: PyTorch's main branch writes, for an allocation made in backward, the frames
# where its tensor was made in forward (a list of strings next to `frames`). No release has it:
# testdata/snapshots/explain/forward_frames.pickle.zst is a real 2.11 snapshot with the key added
# by scripts/add_forward_frames.py (its SOURCE.md says how). Checked here against Python's own
# reading of the pickle: the key is read and written back string for string by convert, and
# explain's sites made in backward are where those strings say forward made their tensors.
f=testdata/snapshots/explain/forward_frames.pickle.zst
zstd -qdc "$f" >"$TMPDIR/s.pickle"
"$MEMSNAP" -q convert "$f" -o "$TMPDIR/s.json"
"$MEMSNAP" -q explain --json "$f" >"$TMPDIR/x.json"
python3 - "$TMPDIR/s.pickle" "$TMPDIR/s.json" "$TMPDIR/x.json" <<'PY'
import json, pickle, sys
tr = pickle.load(open(sys.argv[1], "rb"))["device_traces"][0]
js = json.load(open(sys.argv[2]))["device_traces"][0]
x = json.load(open(sys.argv[3]))
want = [e.get("forward_frames") for e in tr]
got = [e.get("forward_frames") for e in js]
print("entries with forward_frames:", sum(1 for w in want if w),
      "| convert keeps them", "ok" if got == want else "DIFFERS")
p = x["peak"]["event"]
live = {}
for e in tr[:p + 1]:
    if e["action"] == "alloc":
        live[e["addr"]] = e
    elif e["action"] == "free_requested":
        live.pop(e["addr"], None)
held = [e for e in live.values() if e.get("forward_frames")]
sites = {s.rsplit(":", 1)[0] for e in held for s in e["forward_frames"]}
rows = [r for r in x["findings"]["largest_activations"] if r["made_in_backward"]]
print("alive at the peak, made in backward:", sum(e["size"] for e in held), "bytes in", len(held),
      "| rows made in backward:", len(rows),
      "| their bytes within those", "ok" if sum(r["bytes"] for r in rows) <= sum(e["size"] for e in held) else "DIFFERS",
      "| their sites among the strings", "ok" if all(r["site"] in sites for r in rows) else "DIFFERS")
PY
"$MEMSNAP" -q explain "$f" | grep -m2 'made in backward'
# kept by memsnap's own format too (1.5's forward_stack): the bundled conversion, and this
# conversion again, back to JSON, string for string
"$MEMSNAP" -q convert "$f" -o "$TMPDIR/s.zst"
for z in "$TMPDIR/s.zst" testdata/traces/v1.5/forward_frames.zst; do
	"$MEMSNAP" -q convert "$z" -o "$TMPDIR/z.json"
	python3 - "$TMPDIR/s.pickle" "$TMPDIR/z.json" <<'PY'
import json, pickle, sys
a = [e.get("forward_frames") for e in pickle.load(open(sys.argv[1], "rb"))["device_traces"][0]]
b = [e.get("forward_frames") for e in json.load(open(sys.argv[2]))["device_traces"][0]]
print("through .zst:", "ok" if a == b else "DIFFERS")
PY
done
