"$MEMSNAP" verify testdata/snapshots/gpt_train.pickle.zst
