"$MEMSNAP" help diff
