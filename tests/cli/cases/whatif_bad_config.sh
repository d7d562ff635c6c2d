# A --configs file with a setting the model cannot read is refused before any replay, with its
# line (exit 2), not replayed as an error row that exits 0.
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
printf 'expandable_segments:True\n# a comment\nmax_split_size_mb:abc\n' >"$t/configs"
"$MEMSNAP" whatif --configs "$t/configs" testdata/snapshots/dynamic_oom.pickle 2>&1 | sed "s|$t|TMP|"
echo "exit ${PIPESTATUS[0]}"
printf 'bogus_key:7\n' >"$t/configs"
"$MEMSNAP" whatif --configs "$t/configs" testdata/snapshots/dynamic_oom.pickle 2>&1 | sed "s|$t|TMP|"
echo "exit ${PIPESTATUS[0]}"
