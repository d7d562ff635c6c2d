"$MEMSNAP" info testdata/traces/v1.0/dynamic_oom.zst
