# diff says first what the two runs ran with, where it differs: the same job recorded under the
# default settings and under expandable segments (each snapshot records its settings), and a
# snapshot against a memsnap recording of another job on another GPU and limit
"$MEMSNAP" diff testdata/snapshots/settings/settings_default.pickle.zst \
	testdata/snapshots/settings/settings_expandable.pickle.zst 2>/dev/null | sed -n '1,4p'
"$MEMSNAP" diff testdata/snapshots/explain/adamw.zst testdata/snapshots/verdicts/frag.pickle.zst 2>/dev/null |
	sed -n '1,/^$/p'
"$MEMSNAP" -q diff --json testdata/snapshots/settings/settings_default.pickle.zst \
	testdata/snapshots/settings/settings_expandable.pickle.zst | python3 -c '
import json, sys
d = json.load(sys.stdin)["ran_with_differs"]
print("json:", {k: v["differs"] for k, v in d.items()})'
