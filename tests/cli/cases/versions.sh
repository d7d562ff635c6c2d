# Every snapshot layout from PyTorch 2.0 to 2.15 (testdata/snapshots/versions): the release its
# fields fit, pinned host memory shown, and verify on each one that has a trace: identical, or
# one line that says what the snapshot is or lacks.
for f in testdata/snapshots/versions/*.pickle; do
	echo "== $(basename "$f")"
	"$MEMSNAP" info "$f" 2>&1 | grep -E '^(torch|host memory|used):|warning'
	"$MEMSNAP" verify "$f" 2>&1 | grep -v '^memsnap: note' | sed 's/ (taken without.*//'
done
