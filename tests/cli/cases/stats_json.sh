"$MEMSNAP" stats --json --top 3 testdata/snapshots/multistream.pickle.zst
