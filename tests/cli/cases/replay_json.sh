"$MEMSNAP" replay --json testdata/snapshots/resnet50.pickle.gz | head -30
