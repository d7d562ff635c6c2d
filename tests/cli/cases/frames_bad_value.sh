# --frames takes user, all or a number of frames from 1
"$MEMSNAP" stats --frames 0 testdata/snapshots/edge/stacks_all.pickle
