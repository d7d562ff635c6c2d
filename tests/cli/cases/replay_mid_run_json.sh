"$MEMSNAP" replay --json testdata/traces/dynamic_oom_from2000.zst | grep -A4 -E "\"mid_run\"|\"limit_inferred\""
