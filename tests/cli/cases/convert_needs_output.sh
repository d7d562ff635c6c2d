"$MEMSNAP" convert testdata/snapshots/dynamic_oom.pickle
