"$MEMSNAP" infp x
