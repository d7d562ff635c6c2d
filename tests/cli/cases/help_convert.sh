"$MEMSNAP" convert --help
