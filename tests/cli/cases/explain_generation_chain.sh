# A generation job with one concatenation chain (testdata/snapshots/edge/generation_one_chain.json,
# made by scripts/gen_generation_edge.py: 5 forwards, the cache one token of 4096 bytes longer each
# time, its source freed right after): one request, not one per link (the source is taken off the
# cache as its result is made, which must not open a request); its cache 5 x 4096 bytes at its
# largest, 4096 a token; and the source counted in activations at the activations' own peak (the
# last source, 16384 bytes, with a 512-byte temporary freed before it: 16384 + 0 at least).
f=testdata/snapshots/edge/generation_one_chain.json
"$MEMSNAP" -q explain --json "$f" | python3 -c '
import json, sys
r = json.load(sys.stdin)
i = r["inference"]
q = i["requests"]
print("requests", len(q), "| forwards", [x["forwards"] for x in q], "| released",
      [x["released"] for x in q])
print("KV cache peak", r["category_peaks"]["kv_cache"]["bytes"], "(5 x 4096:",
      r["category_peaks"]["kv_cache"]["bytes"] == 5 * 4096, ") | a token",
      [x["kv_cache_bytes_per_token"] for x in q])
print("activations at their peak hold the last source:",
      r["category_peaks"]["activations"]["bytes"] >= 4 * 4096)'
