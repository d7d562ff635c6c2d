"$MEMSNAP" help stats
