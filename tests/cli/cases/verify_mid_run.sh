"$MEMSNAP" verify --limit 13061062656 testdata/traces/dynamic_oom_from2000.zst
