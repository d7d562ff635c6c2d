# names from the trace (frames, annotations) that try to end the data block and run a script
# stay data: three script elements (data, dygraphs, the page's own), the names intact in the JSON
"$MEMSNAP" render testdata/snapshots/hostile/script_in_names.json -o "$TMPDIR/h.html" 2>/dev/null || exit
grep -o '<script[^>]*>' "$TMPDIR/h.html"
python3 - "$TMPDIR/h.html" <<'PY'
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script id="memsnap-data" type="application/json"[^>]*>(.*?)</script>', page, re.S).group(1))
evil = '</script><script>document.title="pwned"</script><!--'
print("site names intact:", any(evil in s for s in d["sites"]))
print("annotation names intact:", evil in d["strings"].values())
PY
