# Steps from a scope the program repeats: an inference loop with no optimizer (explain/scopes,
# recorded on an H100), each iteration inside record_function("decode_step") and keeping its
# logits. explain takes the steps from the scopes (as many as the loop ran, each beginning at the
# first trace entry at or after its scope's start, by the times PyTorch wrote, read by Python),
# and finds the kept logits growing by what one of them holds (truth.json).
f=testdata/snapshots/explain/scopes.pickle.zst
first=$(python3 tests/cli/scope_first_events.py "$f" decode_step)
"$MEMSNAP" -q explain --json "$f" | python3 -c '
import json, sys
e = json.load(sys.stdin)
t = json.load(open(sys.argv[2]))
first = json.loads(sys.argv[3])
print("steps from:", e["steps_from"], e["steps_scope"], "| steps:", len(e["steps"]),
      "the loop ran:", t["steps"])
print("first events as the scopes start:", [s["first_event"] for s in e["steps"]] == first)
g = e["growth"]
print("growth:", len(g), "site(s), per step", g[0]["bytes_per_step"] == t["leak"]["bytes_per_step"],
      "at", g[0]["site"].rsplit("/", 1)[-1])' "$f" testdata/snapshots/explain/scopes.truth.json "$first"
# memsnap's recording holds no record_function scopes: its steps come from the repetition
"$MEMSNAP" -q explain --json testdata/snapshots/explain/scopes.zst | python3 -c '
import json, sys; e = json.load(sys.stdin); print("recording: steps from", e["steps_from"], len(e["steps"]))'
