# diff of two real training loops (testdata/snapshots/explain): the same AdamW loop without and with
# a list that keeps each step's logits (64 MiB a step, by PyTorch's count in leak.truth.json): the
# categories at each peak (the leak is "other", kept across steps) and each step's peak, step by
# step (+64 MiB more at each step). JSON: the same, every step in order.
d=testdata/snapshots/explain
"$MEMSNAP" -q diff "$d/adamw.pickle.zst" "$d/leak.pickle.zst" | sed -n '/what each peak/,/^$/p;/step by step/,/^$/p'
"$MEMSNAP" -q diff --json "$d/adamw.zst" "$d/leak.zst" | python3 -c '
import json, sys
x = json.load(sys.stdin)
c = x["categories"]
print("other: +%d bytes" % (c["other"]["b"] - c["other"]["a"]))
print("steps:", [(s["b_bytes"] - s["a_bytes"]) >> 20 if s["a_bytes"] is not None else None
                 for s in x["steps"]], "MiB")'
# one job's snapshot against its memsnap recording: the same sites, though the two forms name a
# Python function differently (its code's name, its qualified name): no site changes
"$MEMSNAP" -q diff --json testdata/snapshots/explain/adamw.pickle.zst testdata/snapshots/explain/adamw.zst |
	python3 -c '
import json, sys
d = json.load(sys.stdin)
rows = d["sites"]
print("adamw snapshot against its recording:", len(rows), "sites,",
      sum(1 for r in rows if r["a_bytes"] != r["b_bytes"]), "changed")'
