# render --site-depth N names the page's sites as stats, diff and explain do at that depth: the
# user's frame and the N-1 frames it called (a transformers model's wrapper here); at depth 1
# the user's frame alone. The labels are read from the page's data by Python.
f=testdata/snapshots/explain/hf_gpt2.pickle.zst
for depth in 1 2; do
	"$MEMSNAP" -q render --site-depth $depth "$f" -o "$TMPDIR/p.html"
	python3 - "$TMPDIR/p.html" $depth <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
sites = json.loads(re.search(r'"sites":(\[.*?\])', page).group(1))
two = [s for s in sites if " > " in s]
print(f"--site-depth {sys.argv[2]}: {len(sites)} sites, {len(two)} of two frames",
      (two[0].split(" > ")[1].split(" (")[0] if two else ""))
PY
done
"$MEMSNAP" -q stats --site-depth 2 "$f" | grep -c " > " | sed 's/^/stats --site-depth 2: sites of two frames: /'
rm -f "$TMPDIR/p.html"
"$MEMSNAP" render --site-depth 0 "$f" -o "$TMPDIR/p.html" 2>&1 | head -1
