# Steps on one side only: the table is in step order, and says so
"$MEMSNAP" diff testdata/snapshots/explain/leak.pickle.zst testdata/snapshots/explain/frag_oom.pickle.zst 2>/dev/null |
	grep -A3 "of each step"
