# Steps from torch.profiler: a real AdamW loop run under torch.profiler, whose step() opens a
# ProfilerStep#N scope each iteration (recorded on an H100, explain/profiler). explain takes the
# steps from those scopes: one per iteration of the loop (truth.json's steps; the profiler's
# step() after the last iteration opens one more scope, with no optimizer step in it, which is
# not a step), each beginning at the first trace entry at or after its scope's start (by the
# times PyTorch wrote, read by Python), and the model's state still told by the optimizer steps,
# equal to the model's bytes.
f=testdata/snapshots/explain/profiler.pickle.zst
first=$(python3 tests/cli/scope_first_events.py "$f" 'ProfilerStep#*')
"$MEMSNAP" -q explain --json "$f" | python3 -c '
import json, sys
e = json.load(sys.stdin)
t = json.load(open(sys.argv[2]))
first = json.loads(sys.argv[3])
print("steps from:", e["steps_from"], "| steps:", len(e["steps"]), "iterations:", t["steps"],
      "profiler scopes:", len(t["profiler_steps"]), "| the last dropped:",
      e["steps_trailing_annotation_dropped"])
print("first events as the scopes start:",
      [s["first_event"] for s in e["steps"]] == first[:t["steps"]])
st = e["state"]
m = t["model"]
print("state: parameters", st["parameter_bytes"] == m["parameter_bytes"], "gradients",
      st["gradient_bytes"] == m["gradient_bytes"], "optimizer state",
      st["optimizer_state_bytes"] == m["optimizer_state_bytes"])
print("peak in:", e["peak"]["annotation"])' "$f" testdata/snapshots/explain/profiler.truth.json "$first"
