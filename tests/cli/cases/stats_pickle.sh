"$MEMSNAP" stats testdata/snapshots/dynamic_oom.pickle
