"$MEMSNAP" stats --bogus x
