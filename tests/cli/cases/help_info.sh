"$MEMSNAP" help info
