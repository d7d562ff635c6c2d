# every bundled trace at every moment: dot accepts the DOT, with one node per segment
for f in testdata/snapshots/*.pickle* testdata/traces/v1.0/*.zst testdata/traces/dynamic_oom_from2000.zst; do
	for at in peak end 0 oom; do
		if ! "$MEMSNAP" render --format dot --at $at "$f" >"$TMPDIR/x.dot" 2>"$TMPDIR/rdp.err"; then
			grep -q "has no OOM" "$TMPDIR/rdp.err" && continue
			echo "render failed: $f $at"; cat "$TMPDIR/rdp.err"; exit 1
		fi
		segs=$("$MEMSNAP" render --format txt --at $at "$f" 2>/dev/null | sed -n 2p | sed 's/.*; \([0-9]*\) segments.*/\1/')
		nodes=$(dot -Tplain "$TMPDIR/x.dot" | grep -c '^node s[0-9]')
		[ "$segs" = "$nodes" ] || { echo "$f $at: $segs segments, $nodes nodes"; exit 1; }
		echo "ok $(basename "$f") $at $nodes"
	done
done
