"$MEMSNAP" help replay
