# Generation jobs: weights, KV cache, activations and the requests (docs/EXPLAIN.md, "Generation
# jobs"). GPT-2 with transformers' dynamic cache (PyTorch's snapshot) and the paged cache
# (memsnap's recording of the same run); their figures against the jobs' own counts are
# judge_inference's. Then a single forward (eight Linear layers called one after another by a
# loop outside any module) is no generation job, and says why.
d=testdata/snapshots/inference
"$MEMSNAP" -q explain "$d/gpt2_dynamic.pickle.zst" | sed -n '2,/^$/p;/^  a generation job/,/^$/p'
"$MEMSNAP" -q explain "$d/paged.zst" | sed -n '/^  a generation job/,/^$/p'
"$MEMSNAP" -q explain --json "$d/llama_static.pickle.zst" | python3 -c '
import json, sys
r = json.load(sys.stdin)
i = r["inference"]
print(r["job"], i["forwards_from"], i["forwards"], i["eager_forwards_only"], i["kv_cache_rules"])
print({k: v for k, v in r["category_peaks"].items() if v})
for q in i["requests"]:
    print({k: q[k] for k in ("forwards", "kv_cache_peak_bytes", "kv_cache_bytes_per_token", "released")})'
"$MEMSNAP" -q explain --json testdata/snapshots/explain/copies.pickle.zst | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["job"], r["inference"], r["categories"]["weights"], r["categories_note"])'
# Compile contexts at the peak (transformers compiles the static cache's decoding forward;
# recorded with compile_context=True), against Python's own walk over the pickle: the bytes asked
# for by the allocations alive after the peak's event, by their entries' compile_context.
"$MEMSNAP" -q explain --json "$d/llama_static.pickle.zst" >"$TMPDIR/x.json"
zstd -qdc "$d/llama_static.pickle.zst" >"$TMPDIR/s.pickle"
python3 - "$TMPDIR/s.pickle" "$TMPDIR/x.json" <<'PY'
import collections, json, pickle, sys
tr = pickle.load(open(sys.argv[1], "rb"))["device_traces"][0]
x = json.load(open(sys.argv[2]))
p = x["peak"]["event"]
live = {}
for e in tr[:p + 1]:
    if e["action"] == "alloc":
        live[e["addr"]] = (e["size"], e.get("compile_context", "N/A"))
    elif e["action"] == "free_requested":
        live.pop(e["addr"], None)
want = collections.Counter()
for size, ctx in live.values():
    want[ctx] += size
got = {c["context"]: c["bytes"] for c in x["compile_contexts"]}
print("compile contexts at event", p, dict(sorted(got.items())),
      "ok" if got == dict(want) else "DIFFERS from the pickle's " + str(dict(want)))
PY
# stats: at its own peak of requested bytes (a block counts until its free completes)
"$MEMSNAP" -q stats --json "$d/llama_static.pickle.zst" >"$TMPDIR/st.json"
python3 - "$TMPDIR/s.pickle" "$TMPDIR/st.json" <<'PY'
import collections, json, pickle, sys
tr = pickle.load(open(sys.argv[1], "rb"))["device_traces"][0]
st = json.load(open(sys.argv[2]))
p = st["peak_requested_index"]
live = {}
for e in tr[:p + 1]:
    if e["action"] == "alloc":
        live[e["addr"]] = (e["size"], e.get("compile_context", "N/A"))
    elif e["action"] == "free_completed":
        live.pop(e["addr"], None)
want = collections.Counter()
for size, ctx in live.values():
    want[ctx] += size
got = {c["context"]: c["bytes"] for c in st["compile_contexts_at_peak"]}
print("stats: compile contexts at event", p, "ok" if got == dict(want) else "DIFFERS")
PY
# Logits a loop keeps in a list are kept, not a KV cache, whether the file is a snapshot (they
# are alive at its end) or a recording that runs to the program's exit (they are freed in its
# teardown, with the weights): both give the same categories, the leak in other.
for f in testdata/snapshots/explain/scopes.pickle.zst testdata/snapshots/explain/scopes.zst; do
	"$MEMSNAP" -q explain --json "$f" | python3 -c '
import json, sys
r = json.load(sys.stdin)
leak = json.load(open("testdata/snapshots/explain/scopes.truth.json"))["leak"]["bytes"]
c = r["categories"]
print(sys.argv[1].split("/")[-1], r["job"], "kv_cache", c["kv_cache"], "requests",
      len(r["inference"]["requests"]), "| the kept logits in other:",
      "ok" if c["other"] >= leak else "DIFFERS")' "$f"
done
# a trace cut in the middle of the third request (convert --from/--to): that request began
# before it, so its first forward is a token's, and its prompt figures are not known (null)
"$MEMSNAP" -q convert "$d/gpt2_dynamic.pickle.zst" --from 40000 --to 70000 -o "$TMPDIR/cut.zst"
"$MEMSNAP" -q explain --json "$TMPDIR/cut.zst" | python3 -c '
import json, sys
q = json.load(sys.stdin)["inference"]["requests"][0]
print("cut mid-request:", q["began_before_trace"], q["prompt_peak_requested_bytes"],
      q["kv_cache_after_prompt_bytes"], q["kv_cache_bytes_per_token"])'
# A loop of plain tensors (torch.empty, no model) recorded with stacks: its repeated steps are no
# forwards, since the stacks show no module's call; no generation job.
"$MEMSNAP" -q explain --json testdata/snapshots/pools/mempool_on_oom.pickle.zst | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["job"], r["inference"], r["steps_from"], r["categories_note"])'
