# A snapshot whose end-state segments do not fit its events (proto/small_p4: the first 300
# entries of dynamic_oom with all of its segments): the blocks live before its first event are
# placed by the model at the start, so its requested peak counts them. Checked against the
# pickle read here (a restricted unpickler, no memsnap code): the end state's allocated blocks
# that no event allocated, plus a running sum of the events' requests.
f=testdata/snapshots/proto/small_p4.pickle
"$MEMSNAP" replay "$f" 2>&1 >/dev/null
"$MEMSNAP" -q replay --json "$f" | python3 -c '
import json, pickle, sys

class Plain(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("global " + module + "." + name)

snap = Plain(open(sys.argv[1], "rb")).load()
trace = snap["device_traces"][0]
live, before, cur = {}, 0, 0
for e in trace:
    a = e["action"]
    if a == "alloc":
        live[e["addr"]] = e["size"]
    elif a == "free_requested" and e["addr"] not in live:
        before += e["size"]  # freed, never allocated: live before the trace
live_end = {e["addr"] for e in trace if e["action"] == "alloc"}
for e in trace:
    if e["action"] == "free_completed":
        live_end.discard(e["addr"])
for seg in snap["segments"]:
    for b in seg["blocks"]:
        if b["state"] == "active_allocated" and b["address"] not in live_end:
            before += b["requested_size"]
peak = cur = before
alive = {}
for e in trace:
    if e["action"] == "alloc":
        alive[e["addr"]] = e["size"]
        cur += e["size"]
        peak = max(peak, cur)
    elif e["action"] == "free_requested":
        cur -= alive.pop(e["addr"], e["size"])
r = json.load(sys.stdin)
print("placed:", r["mid_run"]["placed"], "blocks:", r["mid_run"]["initial_live_blocks"])
print("requested peak equal to the pickle'\''s:", r["peak_requested_bytes"] == peak, peak)
print("lower bound:", r["peaks_are_lower_bounds"])' "$f"
