# Several files, one unreadable: its error line, exit 1, and no table or JSON (an output is whole
# or none, not one that leaves a rank out)
"$MEMSNAP" stats --json testdata/snapshots/dynamic_oom.pickle testdata/bad/empty.pickle
echo "json: exit $?"
"$MEMSNAP" stats testdata/snapshots/dynamic_oom.pickle testdata/bad/empty.pickle
echo "table: exit $?"
