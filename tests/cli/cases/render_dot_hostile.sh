# hostile names in DOT: escaped for HTML-like labels, and dot still parses the file
"$MEMSNAP" render --format dot --at end testdata/snapshots/hostile/script_in_names.json >"$TMPDIR/h.dot" 2>/dev/null || exit
grep -c '&lt;/script&gt;&lt;script&gt;document.title=&quot;pwned&quot;' "$TMPDIR/h.dot"
dot -Tsvg "$TMPDIR/h.dot" -o /dev/null && echo "dot parsed it"
