# A trace that starts mid-run: the peak inside each annotation counts the blocks from before the
# trace that are live then. The expected values are computed here from the pickle itself: blocks
# allocated before the trace are those freed in it without being allocated in it, and those
# allocated at its end without an alloc event; each is live until its free or the end.
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
for f in late_history late_after_empty_cache ring_wrap lightning; do
	zstd -qdc "testdata/snapshots/real/$f.pickle.zst" >"$t/$f.pickle"
	"$MEMSNAP" diff --json "$t/$f.pickle" "$t/$f.pickle" 2>/dev/null >"$t/$f.json"
	python3 - "$t/$f.pickle" "$t/$f.json" "$f" <<'PY'
import json, pickle, sys

d = pickle.load(open(sys.argv[1], "rb"))  # a bundled test file, trusted
got = {a["name"]: a["a_bytes"] for a in json.load(open(sys.argv[2]))["annotations"]}
tr = d["device_traces"][0]
allocated = {e["addr"] for e in tr if e["action"] == "alloc"}
pre = {}  # addr -> requested bytes of each block from before the trace
for e in tr:
    if e["action"] == "free_requested" and e["addr"] not in allocated:
        pre.setdefault(e["addr"], e["size"])
for s in d["segments"]:
    for b in s["blocks"]:
        if b["state"] == "active_allocated" and b["address"] not in allocated:
            pre.setdefault(b["address"], b["requested_size"])
pre_live = sum(pre.values())
mid_run = bool(pre)
ev = [(e["time_us"], 1, e) for e in tr]
ev += [(a["time_us"], 0, a) for a in d.get("external_annotations", []) if a["device"] == 0]
ev.sort(key=lambda x: (x[0], x[1]))
cur, live, opened, want = 0, {}, [], {}
for _, kind, e in ev:
    if kind == 0:
        if e["stage"] == "START":
            opened.append(e["name"])
            want[e["name"]] = max(want.get(e["name"], 0), cur + pre_live)
        elif e["name"] in opened:
            del opened[len(opened) - 1 - opened[::-1].index(e["name"])]
    elif e["action"] == "alloc":
        live[e["addr"]] = e["size"]
        cur += e["size"]
        if opened:
            want[opened[-1]] = max(want.get(opened[-1], 0), cur + pre_live)
    elif e["action"] == "free_requested":
        if e["addr"] in live:
            cur -= live.pop(e["addr"])
        elif e["addr"] in pre:
            pre_live -= pre.pop(e["addr"])
bad = [n for n in want if got.get(n) != want[n]]
print(sys.argv[3], "annotations:", len(want), "starts mid-run:" if mid_run else "whole run:",
      "all equal" if want and not bad else "differ: %s" % [(n, got.get(n), want[n]) for n in bad])
PY
done
