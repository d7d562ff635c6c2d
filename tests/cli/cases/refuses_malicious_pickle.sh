"$MEMSNAP" info testdata/bad/reduce_os_system_p4.pickle
