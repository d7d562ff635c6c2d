"$MEMSNAP" replay --json testdata/snapshots/dynamic_oom.pickle | grep -A3 -E "limit_(bytes|inferred)"
