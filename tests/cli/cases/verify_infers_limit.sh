"$MEMSNAP" verify testdata/snapshots/dynamic_oom.pickle
