# A trace that starts mid-run and runs out of memory: a block from before the trace is said to be
# one (the holes' neighbours), never given an event of its own; in JSON its index is null.
"$MEMSNAP" replay testdata/traces/dynamic_oom_from2000.zst 2>/dev/null | grep -E 'between'
"$MEMSNAP" replay --json testdata/traces/dynamic_oom_from2000.zst 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
oom = d["oom"] if "oom" in d else d["devices"][0]["oom"]
n = [h[k]["index"] for h in oom["largest_free_blocks"] for k in ("before", "after") if h[k]]
print("neighbours:", len(n), "from before the trace (index null):", n.count(None),
      "largest index:", max(i for i in n if i is not None))
'
