# render's DOT tooltips carry the site and, with --frames 2, its caller
"$MEMSNAP" render --format dot --frames 2 testdata/snapshots/edge/stacks_all.pickle | grep -o 'TOOLTIP="0x[^"]*at [^"]*"'
