# A trace that begins inside a segment it never allocated, and frees nothing it did not allocate:
# made from a real complete snapshot (gpt_train) by taking out its first segment_alloc. The trace
# starts mid-run: the segment is rebuilt from the end state, and verify finds PyTorch's segment
# events (no segment the job never made). No complete bundled trace is taken so (the whole suite).
zstd -qdc testdata/snapshots/gpt_train.pickle.zst >"$TMPDIR/g.pickle"
python3 - "$TMPDIR/g.pickle" "$TMPDIR/unmade.pickle" <<'PY'
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
tr = d["device_traces"][0]
ends = {s["address"] for s in d["segments"]}
first = next(i for i, e in enumerate(tr) if e["action"] == "segment_alloc" and e["addr"] in ends)
del tr[first]
pickle.dump(d, open(sys.argv[2], "wb"))
PY
"$MEMSNAP" verify "$TMPDIR/unmade.pickle" 2>&1 | sed "s|$TMPDIR/||g"
echo "exit $?"
