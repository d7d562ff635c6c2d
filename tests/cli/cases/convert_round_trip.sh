set -eo pipefail
"$MEMSNAP" convert testdata/snapshots/dynamic_oom.pickle -o "$TMPDIR/a.zst" 2>&1 | sed "s|$TMPDIR|TMP|"
"$MEMSNAP" convert "$TMPDIR/a.zst" -o "$TMPDIR/b.json" 2>&1 | sed "s|$TMPDIR|TMP|"
"$MEMSNAP" convert "$TMPDIR/b.json" -o "$TMPDIR/c.zst" 2>&1 | sed "s|$TMPDIR|TMP|"
"$MEMSNAP" info --json "$TMPDIR/c.zst" | grep -E '"(events_total|alloc|oom|segments)"'
cmp "$TMPDIR/a.zst" "$TMPDIR/c.zst" && echo identical
zstd -dc "$TMPDIR/a.zst" | wc -c
