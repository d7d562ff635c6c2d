"$MEMSNAP" info --json --from 100 --to 200 testdata/traces/v1.0/random.zst
