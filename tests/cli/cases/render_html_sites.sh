# the report's top sites at the peak (the model's state at the peak of allocated bytes) and its
# flame graph agree with `memsnap stats` (live allocations counted from the events alone, by
# stack and in requested bytes: the report counts block bytes, so per site the counts are equal
# and the block bytes at least the requested ones)
"$MEMSNAP" render testdata/snapshots/gpt_train.pickle.zst -o "$TMPDIR/g.html" 2>/dev/null || exit
"$MEMSNAP" stats --json testdata/snapshots/gpt_train.pickle.zst >"$TMPDIR/s.json" || exit
python3 - "$TMPDIR/g.html" "$TMPDIR/s.json" <<'PY'
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script id="memsnap-data" type="application/json"[^>]*>(.*?)</script>', page, re.S).group(1))
st = json.load(open(sys.argv[2]))
html = [(r[0], r[1], d["sites"][r[2]] if r[2] >= 0 else "(no stack recorded)") for r in d["top_sites_at_peak"]]
agg = {}
for s in st["top_sites_at_peak"]:
    b, c = agg.get(s["site"], (0, 0))
    agg[s["site"]] = (b + s["bytes"], c + s["count"])
print("peak events: html", d["peak"]["index"], "stats", st["peak_requested_index"])
for b, c, site in html:
    print(f"{site}: {c} allocations (stats {agg[site][1]}), block bytes {b} >= requested {agg[site][0]}: {b >= agg[site][0]}")
f = d["flame_at_peak"]
def ok(n):
    return sum(c[1] for c in n[2]) <= n[1] and all(ok(c) for c in n[2])
print("flame: children within parents:", ok(f), "; stacked bytes", f[1],
      "= all bytes less the unstacked:", f[1] == sum(r[0] for r in html if r[2] != "(no stack recorded)"))
PY
