head -c 9000 testdata/traces/v1.0/random.zst > "$TMPDIR/cut.zst"
cd "$TMPDIR" && "$MEMSNAP" info cut.zst | grep -E '^(events|format)'
