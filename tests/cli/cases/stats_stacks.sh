"$MEMSNAP" stats testdata/snapshots/gpt_train.pickle.zst
