# Copies alive at the peak (a GPT under autocast recorded with stacks="all"): the blocks alive
# after the peak event whose C++ frames name a copying operator, counted here from the pickle
# itself, are what explain says; a snapshot with Python stacks alone cannot tell (null).
f=testdata/snapshots/real/stacks_all.pickle.zst
zstd -qdc "$f" >"$TMPDIR/sa.pickle"
"$MEMSNAP" explain --json "$f" 2>/dev/null >"$TMPDIR/sa.json"
python3 - "$TMPDIR/sa.pickle" "$TMPDIR/sa.json" <<'PY'
import json, pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))  # a bundled test file, trusted
x = json.load(open(sys.argv[2]))
peak = x["peak"]["event"]
ops = ("::clone(", "::_to_copy(", "::contiguous(", "::to_dtype(", "::_to_copy_out(", "::clone_out(")
live = {}
for i, e in enumerate(d["device_traces"][0]):
    if i > peak:
        break
    if e["action"] == "alloc":
        live[e["addr"]] = e
    elif e["action"] == "free_requested":
        live.pop(e["addr"], None)
copies = [e for e in live.values() if any(o in fr["name"] for fr in e.get("frames", []) for o in ops)]
c = x["findings"]["copies_at_peak"] if "findings" in x else x["copies_at_peak"]
print("copies at the peak: explain", c["bytes"], c["allocations"], "| from the pickle",
      sum(e["size"] for e in copies), len(copies))
PY
"$MEMSNAP" explain --json testdata/snapshots/explain/adamw.pickle.zst 2>/dev/null | python3 -c '
import json, sys
x = json.load(sys.stdin)
print("python stacks only:", (x["findings"] if "findings" in x else x)["copies_at_peak"])'
# against a count PyTorch made: autocast's weight casts alive at the peak of a forward pass
# (explain/copies: memory_allocated() at the last layer's forward hook less what was there before
# and the two activations; its truth), from the snapshot; memsnap's recording of the same job
# has Python stacks only, and explain says it cannot tell
for f in testdata/snapshots/explain/copies.pickle.zst testdata/snapshots/explain/copies.zst; do
	"$MEMSNAP" explain --json "$f" 2>/dev/null | python3 -c '
import json, sys
x = json.load(sys.stdin)
c = (x["findings"] if "findings" in x else x)["copies_at_peak"]
t = json.load(open(sys.argv[1]))["copies_at_peak"]
print(sys.argv[2] + ": copies at the peak: explain", (c["bytes"], c["allocations"]) if c else c,
      "| PyTorch", t["bytes"], t["allocations"])' testdata/snapshots/explain/copies.truth.json "$(basename "$f")"
done
