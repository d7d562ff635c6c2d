# per-stream allocated bytes in the report's timeline add up to the total in every bucket,
# and record_function ranges name the buckets they cover
"$MEMSNAP" render testdata/snapshots/multistream.pickle.zst -o "$TMPDIR/m.html" 2>/dev/null || exit
python3 - "$TMPDIR/m.html" <<'PY'
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script id="memsnap-data" type="application/json"[^>]*>(.*?)</script>', page, re.S).group(1))
t = d["timeline"]
print("streams", d["streams"])
bad = [i for i in range(len(t["alloc"])) if sum(c[i] for c in t["stream_alloc"]) != t["alloc"][i]]
print("buckets whose streams do not add up:", len(bad))
print("annotation names:", sorted(d["strings"].values()))
PY
