"$MEMSNAP" stats testdata/snapshots/dynamic_oom.pickle testdata/snapshots/resnet50.pickle.gz testdata/traces/v1.0/dynamic_oom.zst
