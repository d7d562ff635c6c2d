"$MEMSNAP" info testdata/snapshots/resnet50.pickle.gz
