# diff groups and prints sites with their callers under --frames 2
"$MEMSNAP" diff --frames 2 --top 3 testdata/snapshots/edge/stacks_all.pickle testdata/snapshots/edge/stacks_all.pickle | sed -n '/by allocation site/,/annotation/p'
