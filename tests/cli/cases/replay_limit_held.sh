# An inferred per-process limit never starts below what the trace proves PyTorch held at once:
# the largest sum of the recorded segments (segment_alloc minus segment_free), computed here in
# Python straight from the pickles (the project's own recordings), not by memsnap.
for f in testdata/snapshots/dynamic_oom.pickle testdata/snapshots/real/oom_fraction.pickle.zst; do
	"$MEMSNAP" -q replay --json "$f" >"$TMPDIR/r.json"
	case $f in *.zst) zstd -qdc "$f" >"$TMPDIR/s.pickle" ;; *) cp "$f" "$TMPDIR/s.pickle" ;; esac
	python3 - "$f" "$TMPDIR/r.json" "$TMPDIR/s.pickle" <<'PY'
import json, pickle, sys
name, r = sys.argv[1], json.load(open(sys.argv[2]))
now = high = 0
for e in pickle.load(open(sys.argv[3], "rb"))["device_traces"][0]:
    if e["action"] in ("segment_alloc", "segment_map"):
        now += e["size"]
    elif e["action"] in ("segment_free", "segment_unmap"):
        now -= e["size"]
    high = max(high, now)
lim = r["limit_inferred"]
print(name, "held", high, "low", lim["low_bytes"], "high", lim["high_bytes"],
      "ok" if lim["low_bytes"] >= high and lim["held_bytes"] == high else "BELOW WHAT WAS HELD",
      "replayed peak", r["peak_reserved_bytes"], "ok" if r["peak_reserved_bytes"] >= high else "LOW")
PY
done
