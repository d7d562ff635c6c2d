"$MEMSNAP" render --at soon testdata/snapshots/dynamic_oom.pickle
