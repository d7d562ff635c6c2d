"$MEMSNAP" render --at 4742 testdata/snapshots/dynamic_oom.pickle
