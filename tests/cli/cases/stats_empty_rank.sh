# A rank that allocated nothing among several files: its row says so and the others still answer
# (text and JSON, exit 0); the same file alone stays an error (exit 1).
e=testdata/snapshots/edge/empty_rank.pickle
"$MEMSNAP" stats testdata/snapshots/gpt_train.pickle.zst "$e"
echo "exit $?"
"$MEMSNAP" -q stats --json testdata/snapshots/gpt_train.pickle.zst "$e" | python3 -c '
import json, sys
print([(r["trace"].split("/")[-1], r["allocations"], r.get("no_allocations_recorded", False)) for r in json.load(sys.stdin)])'
"$MEMSNAP" stats "$e"
echo "exit $?"
