"$MEMSNAP" replay --alloc-conf bogus:1 testdata/snapshots/resnet50.pickle.gz
