# The CSV's outside_pytorch column: empty where nothing measured it (a PyTorch snapshot), the
# recorder's measurement where it took one (memsnap record's trace of a job beside a raw
# cudaMalloc: what the job itself read at its start, total less free less reserved).
V=testdata/snapshots/verdicts
for f in $V/outside.pickle.zst $V/outside_recorded.zst; do
	"$MEMSNAP" -q render "$f" -o "$TMPDIR/t.csv"
	python3 - "$TMPDIR/t.csv" "$f" $V/outside_recorded.truth.json <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
vals = [r["outside_pytorch"] for r in rows]
t = json.load(open(sys.argv[3]))["recorded"]
free, total = t["mem_get_info_at_start"]
start = total - free - t["reserved_at_start"]
filled = [int(v) for v in vals if v != ""]
print(sys.argv[2].split("/")[-1], "| rows", len(rows), "| empty", vals.count(""),
      "| highest", max(filled) if filled else None,
      "| the job's start reading" if filled and max(filled) == start else "")
PY
done
