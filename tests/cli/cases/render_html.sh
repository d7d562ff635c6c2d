# the HTML report: one file, nothing loaded from elsewhere, and its data agrees with PyTorch:
# dynamic_oom.truth.json has allocated_bytes.all.peak 9683379200 and
# reserved_bytes.all.peak 11106516992 (under the recorded limit, given here)
"$MEMSNAP" render --limit 13061062656 testdata/snapshots/dynamic_oom.pickle -o "$TMPDIR/r.html" 2>/dev/null || exit
grep -c '<script src\|<link \|@import\|url(http' "$TMPDIR/r.html"
grep -o 'Content-Security-Policy" content="[^"]*"' "$TMPDIR/r.html"
python3 - "$TMPDIR/r.html" <<'PY'
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<script id="memsnap-data" type="application/json"[^>]*>(.*?)</script>', page, re.S)
d = json.loads(m.group(1))
t = d["timeline"]
print("buckets", len(t["first"]), "of", d["bucket_events"], "events each")
print("peak allocated", max(t["alloc_max"]), "reserved", max(t["res_max"]))
f = d["fine"]
print("finer level: buckets", len(f["first"]), "of", f["bucket_events"], "events each; peak allocated",
      max(f["alloc_max"]), "reserved", max(f["res_max"]))
print("moments", len(d["moments"]), [m["label"] for m in d["moments"] if m["label"]])
print("oom at", d["oom"]["index"], "requested", d["oom"]["requested"])
# the what-if rows are `memsnap whatif`'s (whatif_oom.stdout.exact has the same numbers)
for r in d["whatif"]:
    print("whatif", r["alloc_conf"] or "(recorded)", r["peak_reserved_bytes"], r["first_oom_index"],
          r["min_memory_bytes"])
PY
