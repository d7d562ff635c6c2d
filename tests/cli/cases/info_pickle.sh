"$MEMSNAP" info testdata/snapshots/dynamic_oom.pickle
