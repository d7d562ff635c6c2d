# A training job's evaluation loops (docs/EXPLAIN.md, "Evaluation loops in training jobs"): GPT-2
# trained with AdamW and evaluated twice between its optimizer steps (validation batches, then
# generate with the dynamic cache); the loops' figures against the job's own counts are
# judge_inference's. Then a cache made once and reused by three requests: one span that says it may
# be several. A trace without stacks looks for no loops and says why; a training iteration that
# died in its forward is no loop. Then crafted jobs (scripts/gen_eval_edge.py): three top-level
# modules an iteration give no loop; Lightning's iterations inside Optimizer.step give loops of 3
# and 2 forwards; a validation's outputs kept for a metric are no KV cache; a cache kept from one
# loop into the next is each loop's own; an evaluation of 3 forwards, then an iteration that runs
# out of memory in its third module's forward, gives one loop of 3.
d=testdata/snapshots/inference
"$MEMSNAP" -q explain "$d/train_eval.zst" | sed -n '/^    kv_cache/p;/^  evaluation loops/,/^$/p'
"$MEMSNAP" -q explain "$d/llama_static_kept.pickle.zst" | sed -n '/^  requests/,/^$/p'
"$MEMSNAP" -q explain --json testdata/snapshots/gpt_train.pickle.zst | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["job"], r["eval_loops"], r["categories"]["kv_cache"])'
"$MEMSNAP" -q explain --json testdata/snapshots/dynamic_oom.pickle | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["job"], r["eval_loops"])'
# rank 1 of a DDP job died in its fifth iteration's forward: that forward, with no backward after
# it, is the iteration that never reached its backward, not an evaluation loop
"$MEMSNAP" -q explain --json testdata/snapshots/verdicts/ddp_rank1.pickle.zst | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["job"], r["eval_loops"], r["oom"]["event"] is not None)'
"$MEMSNAP" -q explain --at 5000 testdata/snapshots/inference/train_eval.pickle.zst | sed -n 3p
for f in two_calls lightning kept_outputs cache_across then_oom; do
	"$MEMSNAP" -q explain --json "testdata/snapshots/edge/eval_$f.json" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sys.argv[1], r["categories"]["kv_cache"], [(l["forwards"], [(q["forwards"], q["kv_cache_peak_bytes"], q["released"]) for q in l["requests"]]) for l in r["eval_loops"]["loops"]])' "$f"
done
