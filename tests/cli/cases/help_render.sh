"$MEMSNAP" help render
