# A trace that starts mid-run: every peak and least memory is a lower bound (>=)
printf 'recorded\nexpandable_segments:True\n' > "$TMPDIR/confs"
"$MEMSNAP" whatif --configs "$TMPDIR/confs" testdata/traces/dynamic_oom_from2000.zst 2>/dev/null |
	grep -E "^\(recorded|^expandable|^>="
