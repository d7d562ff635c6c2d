# Each command opens each input once (parse/source.h) and says, with MEMSNAP_SHOW_PASSES=1, what
# it read it for. A .zst trace of two devices: replay and check stream it once for its devices
# and once a device; explain and whatif read it whole once for every pass; render reads it whole
# once for the page's diagnosis and verdict beside its replays. A snapshot is read whole once,
# whatever the command; diff reads each file whole once; stats streams each file once, then once
# a device. The opens themselves are counted where strace is installed.
M=testdata/snapshots/multi_gpu
S=testdata/snapshots/explain/frag_oom.pickle.zst
for cmd in "replay $M/pipeline.zst" "verify $M/pipeline.zst" "check $M/pipeline.zst" \
	"explain $M/pipeline.zst" "whatif $M/pipeline.zst" "render --format txt $M/pipeline.zst" \
	"render -o $TMPDIR/p.html $M/pipeline.zst" "render --format csv -o $TMPDIR/p.csv $M/pipeline.zst" \
	"stats $M/pipeline.zst $S" "replay $S" "explain $S" "render -o $TMPDIR/s.html $S" \
	"diff $M/pipeline.zst $S" "explain $M/pipeline.zst $S"; do
	echo "== memsnap $cmd" | sed "s|$TMPDIR/|OUT/|"
	MEMSNAP_SHOW_PASSES=1 "$MEMSNAP" -q $cmd 2>&1 >/dev/null | grep "opened once"
	# (not under AddressSanitizer, which a traced process does not run under)
	if command -v strace >/dev/null && [ -z "${ASAN_OPTIONS:-}" ]; then
		strace -f -e trace=openat,open -o "$TMPDIR/opens" "$MEMSNAP" -q $cmd >/dev/null 2>&1
		for f in $M/pipeline.zst $S; do
			n=$(grep -c "\"$f\"" "$TMPDIR/opens")
			[ "$n" -le 1 ] || echo "$f: opened $n times"
		done
	fi
done
