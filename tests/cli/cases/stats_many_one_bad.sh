"$MEMSNAP" stats --json testdata/snapshots/dynamic_oom.pickle testdata/bad/empty.pickle | grep -c peak_requested_bytes
