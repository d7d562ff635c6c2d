"$MEMSNAP" info - < testdata/snapshots/dynamic_oom.pickle | head -3
