"$MEMSNAP" info --json testdata/snapshots/gpt_train.pickle.zst
