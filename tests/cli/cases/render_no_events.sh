# nothing to draw: one clear line and exit 1, not an empty page
"$MEMSNAP" render testdata/snapshots/edge/no_events.json -o "$TMPDIR/a.html"; echo "exit $?"
"$MEMSNAP" render testdata/snapshots/edge/device1_only.json -o "$TMPDIR/b.html"; echo "exit $?"
"$MEMSNAP" render --device 1 --format txt testdata/snapshots/edge/device1_only.json | head -2
test -e "$TMPDIR/a.html" || test -e "$TMPDIR/b.html" || echo "no files written"
# a window holding only other devices' events (event 0 of random.zst is device 1's)
"$MEMSNAP" render --from 0 --to 1 testdata/traces/v1.0/random.zst -o "$TMPDIR/c.html"; echo "exit $?"
