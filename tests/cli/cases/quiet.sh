# -q: no notes, warnings or "wrote" lines; errors still come. A mid-run trace gives a note,
# render -o a "wrote" line; with -q stderr is empty, and an error is still one line.
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
f=testdata/snapshots/real/late_history.pickle.zst
"$MEMSNAP" replay "$f" 2>&1 >/dev/null | grep -c "note: "
"$MEMSNAP" -q replay "$f" 2>&1 >/dev/null | wc -l
"$MEMSNAP" -q render "$f" -o "$t/r.html" 2>&1 | wc -l
test -s "$t/r.html" && echo "page written"
"$MEMSNAP" -q replay "$t/missing.zst" 2>&1 | sed "s|$t|TMP|"
# -q (or --quiet) after the command works the same
"$MEMSNAP" replay -q "$f" 2>&1 >/dev/null | wc -l
"$MEMSNAP" replay "$f" --quiet 2>&1 >/dev/null | wc -l
