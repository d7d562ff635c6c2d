# every bad input and fuzz-corpus file through render (txt and html): exit 0 or 1 with at most
# one error line, never a crash (under ASan: no memory error either)
n=0 bad=0
for f in testdata/bad/* testdata/corpus/pickle/* testdata/corpus/trace/*; do
	case "$f" in *EXPECTED*|*README*) continue ;; esac
	for fmt in txt html; do
		"$MEMSNAP" render --format "$fmt" --no-whatif "$f" -o "$TMPDIR/out.$fmt" >/dev/null 2>"$TMPDIR/rbi.err"
		rc=$?
		n=$((n + 1))
		if [ $rc -gt 1 ] || [ "$(grep -c 'error' "$TMPDIR/rbi.err")" -gt 1 ]; then
			echo "$f ($fmt): exit $rc"; head -3 "$TMPDIR/rbi.err"; bad=$((bad + 1))
		fi
	done
done
echo "$n renders, $bad bad"
