# --frames all: the whole stack below each site (C++ and Python, innermost first), the site's
# frame marked with >; sites grouped by their whole stacks
"$MEMSNAP" stats --frames all --top 2 testdata/snapshots/edge/stacks_all.pickle | sed -n '/top sites/,/end state/p'
