set -e
"$MEMSNAP" convert testdata/snapshots/dynamic_oom.pickle -o "$TMPDIR/a.zst"
"$MEMSNAP" convert "$TMPDIR/a.zst" -o "$TMPDIR/b.json"
"$MEMSNAP" convert "$TMPDIR/b.json" -o "$TMPDIR/c.zst"
"$MEMSNAP" info --json "$TMPDIR/c.zst" | grep -E '"(events_total|alloc|oom|segments)"'
cmp "$TMPDIR/a.zst" "$TMPDIR/c.zst" && echo identical
zstd -dc "$TMPDIR/a.zst" | wc -c
