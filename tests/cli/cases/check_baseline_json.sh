"$MEMSNAP" check --json --baseline testdata/snapshots/resnet50.pickle.gz --max-growth 5% testdata/snapshots/gpt_train.pickle.zst
