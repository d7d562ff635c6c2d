# A file cut off before anything is readable says so in its error line
head -c 3 testdata/snapshots/gpt_train.pickle.zst > "$TMPDIR/three.pickle.zst"
"$MEMSNAP" info "$TMPDIR/three.pickle.zst" 2>&1 | sed "s|$TMPDIR|TMP|g"
echo "exit ${PIPESTATUS[0]}"
# a one-frame trace cut inside its frame: no event readable
"$MEMSNAP" -q convert testdata/snapshots/gpt_train.pickle.zst -o "$TMPDIR/t.zst"
head -c 2000 "$TMPDIR/t.zst" > "$TMPDIR/cut.zst"
for c in stats explain; do
	"$MEMSNAP" $c "$TMPDIR/cut.zst" 2>&1 | grep error | sed "s|$TMPDIR|TMP|g"
	echo "exit ${PIPESTATUS[0]}"
done
