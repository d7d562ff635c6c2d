# verify --json prints JSON and nothing else, identical or diverging, pools known or not
for f in testdata/snapshots/gpt_train.pickle.zst testdata/snapshots/pools/mempool.pickle.zst \
	testdata/snapshots/pools/graph_pools.zst testdata/snapshots/settings/settings_gc06.pickle.zst; do
	"$MEMSNAP" -q verify --json "$f" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sys.argv[1], "identical" if r["identical"] else "diverges")' "$f"
done
