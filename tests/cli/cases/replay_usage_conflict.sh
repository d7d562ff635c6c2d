"$MEMSNAP" replay --limit 1GiB --memory-fraction 0.5 testdata/snapshots/resnet50.pickle.gz
