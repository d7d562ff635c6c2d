# The steps' peaks of requested bytes count a block until its free completes, as PyTorch's
# requested_bytes does: the highest of them is PyTorch's own peak (truth.json), on the real
# recordings that have steps and history from the start
for n in multistream gpt_train explain/adamw explain/leak explain/sgd; do
	f=testdata/snapshots/$n.pickle.zst
	"$MEMSNAP" -q explain --json "$f" | python3 -c '
import json, sys
e = json.load(sys.stdin)
t = json.load(open(sys.argv[2]))
top = max(s["peak_requested_bytes"] for s in e["steps"])
print(sys.argv[1], len(e["steps"]), "steps; highest step peak", top, "PyTorch",
      t["stats"]["requested_bytes.all.peak"], top == t["stats"]["requested_bytes.all.peak"])' \
		"$n" "testdata/snapshots/$n.truth.json"
done
