# A file given twice is read once and makes one row, said on stderr.
"$MEMSNAP" stats testdata/snapshots/dynamic_oom.pickle testdata/snapshots/gpt_train.pickle.zst \
	testdata/snapshots/dynamic_oom.pickle
echo "exit $?"
"$MEMSNAP" stats --json testdata/snapshots/dynamic_oom.pickle testdata/snapshots/dynamic_oom.pickle |
	python3 -c 'import json, sys; d = json.load(sys.stdin); print("json rows:", len(d.get("files", [d])))'
