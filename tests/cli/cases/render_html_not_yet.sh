"$MEMSNAP" render -o "$TMPDIR/report.html" testdata/snapshots/proto/small_p4.pickle
