"$MEMSNAP" info testdata/bad/newer_major.zst
