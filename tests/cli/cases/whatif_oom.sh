"$MEMSNAP" whatif --limit 13061062656 testdata/snapshots/dynamic_oom.pickle
