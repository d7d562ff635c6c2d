"$MEMSNAP" whatif --json --limit 13061062656 testdata/snapshots/dynamic_oom.pickle | grep -B2 -A8 "expandable_segments:True\","
