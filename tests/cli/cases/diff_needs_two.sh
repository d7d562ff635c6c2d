"$MEMSNAP" diff testdata/snapshots/gpt_train.pickle.zst
