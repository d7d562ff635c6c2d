head -c 9000 testdata/traces/v1.0/random.zst > "$TMPDIR/cut.zst"
cd "$TMPDIR" && "$MEMSNAP" info cut.zst | grep -E '^(events|format)'
# verify says how far it could compare (a recording cut short by a killed process)
head -c 5000 "$OLDPWD/testdata/snapshots/pools/graph_pools.zst" >gp_cut.zst
"$MEMSNAP" verify gp_cut.zst 2>/dev/null
"$MEMSNAP" -q verify --json gp_cut.zst | grep trace_cut_short
# diff compares a cut trace as far as it goes, and says so
head -c 12000 "$OLDPWD/testdata/snapshots/explain/sgd.zst" >sgd_cut.zst
"$MEMSNAP" diff "$OLDPWD/testdata/snapshots/explain/sgd.zst" sgd_cut.zst 2>&1 >/dev/null | grep -c 'sgd_cut.zst: truncated frame'
