# The recordings of testdata/snapshots/real: verify on each (every trace identical, or agrees
# with what it determines; mid-run ones say so; the files without a trace say what they lack).
# Their numbers against PyTorch's own are checked in test_replay.c (real_recordings_*).
for f in testdata/snapshots/real/*.pickle*; do
	"$MEMSNAP" verify "$f" 2>&1 | sed 's/ (taken without.*//'
	echo "exit ${PIPESTATUS[0]}"
done
"$MEMSNAP" stats testdata/snapshots/real/late_history.pickle.zst | grep -E 'mid-run|peak requested'
