"$MEMSNAP" info no/such/file.pickle
