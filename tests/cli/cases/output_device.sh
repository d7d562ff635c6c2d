# A destination that is a device or a FIFO is written in place and never replaced; a write that
# fails (/dev/full) is an error, and no "wrote" line
f=testdata/snapshots/gpt_train.pickle.zst
"$MEMSNAP" render "$f" -o /dev/full --format html
echo "exit $?"
[ -c /dev/full ] && echo "/dev/full is still a device"
mkfifo "$TMPDIR/fifo"
wc -c <"$TMPDIR/fifo" >"$TMPDIR/count" &
"$MEMSNAP" -q convert "$f" -o "$TMPDIR/fifo" --format json
echo "exit $?"
wait
[ -p "$TMPDIR/fifo" ] && echo "the FIFO is still a FIFO; it got $(cat "$TMPDIR/count") bytes"
