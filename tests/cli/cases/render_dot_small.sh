# DOT of a small snapshot after event 150, checked by Graphviz's own parser too
"$MEMSNAP" render --format dot --at 150 testdata/snapshots/proto/small_p4.pickle >"$TMPDIR/s.dot" || exit
cat "$TMPDIR/s.dot"
dot -Tsvg "$TMPDIR/s.dot" -o /dev/null
