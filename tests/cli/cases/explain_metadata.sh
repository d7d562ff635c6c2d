# Steps from the allocations' user_metadata ("step N", set by the program each iteration): each
# label's first allocation begins a step. Checked against the pickle read here (a restricted
# unpickler) and the labels the job set (truth); memsnap's recording of the same run carries no
# metadata, so its steps come from the optimizer steps.
f=testdata/snapshots/explain/metadata
"$MEMSNAP" -q explain --json "$f.pickle.zst" >"$TMPDIR/e.json"
zstd -qdc "$f.pickle.zst" >"$TMPDIR/m.pickle"
python3 - "$TMPDIR/e.json" "$TMPDIR/m.pickle" "$f.truth.json" <<'PY'
import json, pickle, sys

class Plain(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("global " + module + "." + name)

e = json.load(open(sys.argv[1]))
snap = Plain(open(sys.argv[2], "rb")).load()
labels = json.load(open(sys.argv[3]))["metadata_labels"]
first = {}
for i, x in enumerate(snap["device_traces"][0]):
    m = x.get("user_metadata")
    if x["action"] == "alloc" and m and m not in first:
        first[m] = i
print("steps_from", e["steps_from"], "scope", e["steps_scope"], "steps", len(e["steps"]))
print("labels the job set:", len(labels), "| each step begins at its label's first allocation:",
      [s["first_event"] for s in e["steps"]] == [first[l] for l in labels])
PY
"$MEMSNAP" -q explain --json "$f.zst" | python3 -c '
import json, sys; e = json.load(sys.stdin); print("recording: steps_from", e["steps_from"], len(e["steps"]))'
