# --frames N: below each holder's site, its N-1 callers of the same kind
"$MEMSNAP" replay --frames 3 testdata/snapshots/edge/stacks_all.pickle | sed -n '/who holds/,$p'
