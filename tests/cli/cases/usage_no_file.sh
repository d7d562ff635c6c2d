"$MEMSNAP" info
