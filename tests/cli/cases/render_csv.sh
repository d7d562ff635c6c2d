# render --format csv: the timeline, a row per bucket; its extremes are PyTorch's own peaks (the
# snapshot's truth, recorded on the GPU), whatever the number of buckets; -o *.csv picks the format
for s in explain/leak dynamic_seq; do
	f=$(ls testdata/snapshots/$s.pickle*)
	truth=testdata/snapshots/$s.truth.json
	for detail in 2000 10; do
		"$MEMSNAP" render --format csv --detail $detail "$f" 2>/dev/null >"$TMPDIR/t.csv"
		python3 - "$TMPDIR/t.csv" "$truth" "$s" $detail <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = json.load(open(sys.argv[2]))
st = t.get("stats") or t["memory_stats"]
a = max(int(r["allocated_max"]) for r in rows)
r = max(int(r["reserved_max"]) for r in rows)
print(sys.argv[3], "buckets", len(rows), "of at most", sys.argv[4],
      "allocated peak", "equal" if a == st["allocated_bytes.all.peak"] else f"{a} != truth",
      "reserved peak", "equal" if r == st["reserved_bytes.all.peak"] else f"{r} != truth",
      "annotated rows", sum(1 for x in rows if x["annotation"]))
PY
	done
done
"$MEMSNAP" render testdata/snapshots/explain/leak.pickle.zst -o "$TMPDIR/leak.csv" 2>/dev/null && head -c 40 "$TMPDIR/leak.csv"; echo
"$MEMSNAP" render --format csv --at peak testdata/snapshots/explain/leak.pickle.zst 2>&1 | head -1
