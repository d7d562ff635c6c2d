# nothing to draw: one clear line and exit 1, not an empty page; a file whose only events are on
# device 1 is drawn for device 1
"$MEMSNAP" render testdata/snapshots/edge/no_events.json -o "$TMPDIR/a.html"; echo "exit $?"
"$MEMSNAP" render testdata/snapshots/edge/device1_only.json -o "$TMPDIR/b.html" 2>/dev/null; echo "exit $?"
"$MEMSNAP" render --device 1 --format txt testdata/snapshots/edge/device1_only.json | head -2
test -e "$TMPDIR/a.html" || echo "a.html not written"
test -e "$TMPDIR/b.html" && echo "b.html written"
# a window holding only other devices' events (event 0 of random.zst is device 1's)
"$MEMSNAP" render --from 0 --to 1 testdata/traces/v1.0/random.zst -o "$TMPDIR/c.html"; echo "exit $?"
