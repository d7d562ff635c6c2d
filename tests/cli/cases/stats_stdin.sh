# stats of a snapshot from standard input says what it says of the file: one device, two (a file
# read again for each device: standard input, readable once, is read whole once for them all),
# JSON and --device too.
for f in testdata/snapshots/dynamic_oom.pickle testdata/snapshots/devices/two_devices.pickle.zst \
	testdata/snapshots/multi_gpu/pipeline.pickle.zst; do
	for opt in "" --json "--device 0"; do
		"$MEMSNAP" -q stats $opt "$f" 2>&1 | sed "s|$f|-|g" >"$TMPDIR/file"
		"$MEMSNAP" -q stats $opt - <"$f" >"$TMPDIR/stdin" 2>&1
		echo "$?" >>"$TMPDIR/stdin"
		echo 0 >>"$TMPDIR/file"
		if cmp -s "$TMPDIR/file" "$TMPDIR/stdin"; then
			echo "${f##*/} $opt: the same from standard input"
		else
			echo "${f##*/} $opt: DIFFERS"
			diff "$TMPDIR/file" "$TMPDIR/stdin" | head -5
		fi
	done
done
