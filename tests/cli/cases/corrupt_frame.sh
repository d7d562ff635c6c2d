"$MEMSNAP" info testdata/bad/flipped_frame.zst
