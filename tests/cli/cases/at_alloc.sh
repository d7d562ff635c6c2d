# --at: the moment right after one event, here an allocation (alloc:ADDRESS#N, the Nth at that
# address) or a completed free (free:ADDRESS#N), in explain, stats, replay and render. Checked
# against Python's own walk over the pickle: the entry's index, and the bytes asked for by the
# allocations alive after it.
f=testdata/snapshots/inference/llama_dynamic.pickle.zst
zstd -qdc "$f" >"$TMPDIR/s.pickle"
python3 - "$TMPDIR/s.pickle" >"$TMPDIR/want" <<'PY'
import collections, pickle, sys
tr = pickle.load(open(sys.argv[1], "rb"))["device_traces"][0]
allocs = collections.defaultdict(list)
frees = collections.defaultdict(list)
for i, e in enumerate(tr):
    if e["action"] == "alloc":
        allocs[e["addr"]].append(i)
    elif e["action"] == "free_completed":
        frees[e["addr"]].append(i)
addr = max(allocs, key=lambda a: len(allocs[a]))  # the address used most
def after(p, freed):
    live = {}
    for e in tr[:p + 1]:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
        elif e["action"] == freed:
            live.pop(e["addr"], None)
    return sum(live.values())
a3, f2 = allocs[addr][2], frees[addr][1]
print(hex(addr), a3, after(a3, "free_requested"), after(a3, "free_completed"), f2,
      after(f2, "free_completed"), len(allocs[addr]))
PY
read -r addr a3 want_x want_s f2 want_f n <"$TMPDIR/want"
echo "the address used most: $n allocations"
"$MEMSNAP" -q explain --json --at "alloc:$addr#3" "$f" | python3 -c '
import json, sys
r = json.load(sys.stdin)
c = r["categories"]
held = sum(v for k, v in c.items() if k not in ("rounding", "recorded_oom_request",
           "cached_free", "outside_pytorch") and v)
print("explain: event", r["peak"]["event"], "ok" if r["peak"]["event"] == int(sys.argv[1]) else "DIFFERS",
      "| held after it", "ok" if held == int(sys.argv[2]) else f"DIFFERS {held} {sys.argv[2]}",
      "| window", r["window"]["from_event"], r["window"]["to_event"])' "$a3" "$want_x"
"$MEMSNAP" -q stats --json --at "alloc:$addr#3" "$f" | python3 -c '
import json, sys
w = json.load(sys.stdin)["windows"][0]
print("stats: event", w["from_event"], "requested after it",
      "ok" if w["requested_bytes_at_end"] == int(sys.argv[1]) else "DIFFERS")' "$want_s"
"$MEMSNAP" -q stats --json --at "free:$addr#2" "$f" | python3 -c '
import json, sys
w = json.load(sys.stdin)["windows"][0]
print("stats free: event", w["from_event"], "ok" if w["from_event"] == int(sys.argv[1]) else "DIFFERS",
      "requested after it", "ok" if w["requested_bytes_at_end"] == int(sys.argv[2]) else "DIFFERS")' "$f2" "$want_f"
"$MEMSNAP" -q replay --json --at "alloc:$addr#3" "$f" | python3 -c '
import json, sys
w = json.load(sys.stdin)["windows"][0]
print("replay: events", w["from_event"], "to", w["to_event"], "closed", w["closed"])'
"$MEMSNAP" -q render --at "alloc:$addr#3" "$f" | head -1 | sed 's/^[^:]*: //'
"$MEMSNAP" explain --at "alloc:$addr#9999" "$f" >/dev/null 2>"$TMPDIR/e"
echo "exit $?: $(sed 's/^[^:]*: [^:]*: //' "$TMPDIR/e")"
"$MEMSNAP" stats --at "alloc:0x12#0" "$f" >/dev/null 2>"$TMPDIR/e"
echo "exit $?: $(head -1 "$TMPDIR/e")"
"$MEMSNAP" stats --at "1234#2" "$f" >/dev/null 2>"$TMPDIR/e"
echo "exit $?: $(head -1 "$TMPDIR/e")"
"$MEMSNAP" explain --at 5 --from 3 "$f" >/dev/null 2>"$TMPDIR/e"
echo "exit $?: $(head -1 "$TMPDIR/e")"
# diff --at: what each run held right after its own such event, here PyTorch's snapshot against
# memsnap's recording of the same run (the recording's events number the raw CUDA calls too)
g=testdata/snapshots/inference/gpt2_dynamic
"$MEMSNAP" -q diff --json --at "alloc:0x7fb75ffce200#2" "$g.pickle.zst" "$g.zst" | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = d["categories"]
print("diff --at: events", d["at"]["a_event"], d["at"]["b_event"], "| the same categories:",
      all(v["a"] == v["b"] for v in c.values()))'
