"$MEMSNAP" diff testdata/snapshots/resnet50.pickle.gz testdata/snapshots/gpt_train.pickle.zst
