"$MEMSNAP" render --at oom testdata/snapshots/proto/small_p4.pickle
