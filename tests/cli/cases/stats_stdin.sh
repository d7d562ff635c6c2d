# stats of a snapshot from standard input says what it says of the file: one device, two (a
# file read again for each device: standard input, readable once, is read whole once for them
# all), JSON and --device too; and a named pipe, read once as standard input is.
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
# a named pipe is read once too, as standard input is: the same answers as the file's
f=testdata/snapshots/devices/two_devices.pickle.zst
mkfifo "$TMPDIR/pipe"
for cmd in stats replay explain; do
	"$MEMSNAP" -q $cmd "$f" 2>&1 | sed "s|$f|PIPE|g" >"$TMPDIR/file"
	cat "$f" >"$TMPDIR/pipe" &
	"$MEMSNAP" -q $cmd "$TMPDIR/pipe" 2>&1 | sed "s|$TMPDIR/pipe|PIPE|g" >"$TMPDIR/piped"
	wait
	cmp -s "$TMPDIR/file" "$TMPDIR/piped" && echo "$cmd from a named pipe: the same" ||
		{ echo "$cmd from a named pipe: DIFFERS"; diff "$TMPDIR/file" "$TMPDIR/piped" | head -5; }
done
