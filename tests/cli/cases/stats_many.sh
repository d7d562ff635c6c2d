"$MEMSNAP" stats testdata/snapshots/dynamic_oom.pickle testdata/snapshots/resnet50.pickle.gz testdata/traces/v1.0/dynamic_oom.zst
# snapshots without a trace: their peaks are their end states, at no event, with no median of 0 bytes
"$MEMSNAP" stats testdata/snapshots/real/no_history.pickle testdata/snapshots/real/no_traces.pickle
