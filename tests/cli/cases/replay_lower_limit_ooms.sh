"$MEMSNAP" replay --limit 9GiB testdata/snapshots/dynamic_oom.pickle
