"$MEMSNAP" check testdata/snapshots/gpt_train.pickle.zst
