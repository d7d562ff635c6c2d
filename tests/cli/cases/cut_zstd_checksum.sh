# A .pickle.zst missing only its last bytes (the zstd frame's checksum, after the pickle's STOP)
# is cut off: the stream is read to its end, not only to the pickle's
f=testdata/snapshots/explain/adamw.pickle.zst
n=$(stat -c %s "$f")
head -c $((n - 2)) "$f" >"$TMPDIR/c.pickle.zst"
"$MEMSNAP" info "$TMPDIR/c.pickle.zst" 2>&1 >/dev/null | sed "s|$TMPDIR|TMP|g"
echo "exit ${PIPESTATUS[0]}"
