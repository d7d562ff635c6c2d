# A memsnap trace cut short (no END record) is drawn from what it holds, and the page's data
# says so (its summary line tells the reader); a whole one says it is not
head -c 9150 testdata/snapshots/explain/adamw.zst >"$TMPDIR/cut.zst"
for f in "$TMPDIR/cut.zst" testdata/snapshots/explain/adamw.zst; do
	"$MEMSNAP" -q render "$f" -o "$TMPDIR/p.html" 2>/dev/null
	echo "$(basename "$f"): $(grep -o '"cut_short":[a-z]*' "$TMPDIR/p.html" | head -1)"
done
