# explain --alloc-conf X: the least memory it reports is X's, as whatif finds it for X (not the
# recorded settings'), on real recordings under two settings.
for a in "testdata/snapshots/explain/adamw.zst expandable_segments:True" \
	"testdata/snapshots/explain/frag_oom.zst max_split_size_mb:64"; do
	set -- $a
	e=$("$MEMSNAP" -q explain --json --alloc-conf "$2" "$1" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["min_memory_bytes"])')
	w=$("$MEMSNAP" -q whatif --json --configs <(echo "$2") "$1" |
		python3 -c 'import json, sys
d = json.load(sys.stdin); d = d[0] if isinstance(d, list) else d
print([s for s in d["settings"] if not s["recorded"]][0]["min_memory_bytes"])')
	echo "$(basename "$1") --alloc-conf $2: explain $e, whatif $w, $([ "$e" = "$w" ] && echo equal || echo DIFFERENT)"
done
