# An output that cannot be written is refused before any work, in one line, and leaves nothing
"$MEMSNAP" render testdata/snapshots/gpt_train.pickle.zst -o "$TMPDIR/missing/x.html" 2>&1 | sed "s|$TMPDIR|TMP|g"
echo "exit ${PIPESTATUS[0]}"
mkdir "$TMPDIR/d"
"$MEMSNAP" convert testdata/snapshots/gpt_train.pickle.zst -o "$TMPDIR/d" 2>&1 | sed "s|$TMPDIR|TMP|g"
echo "exit ${PIPESTATUS[0]}"
ls -A "$TMPDIR/d"
