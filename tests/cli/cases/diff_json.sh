"$MEMSNAP" diff --json --top 2 testdata/snapshots/multistream.pickle.zst testdata/snapshots/gpt_train.pickle.zst
