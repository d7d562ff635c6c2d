# held against: "$MEMSNAP" stats --json FILE, for each snapshot
# An independent reader of PyTorch's snapshots (not memsnap's code: a restricted unpickler whose
# find_class refuses everything; memory_viz's arithmetic on the same dicts) gives each device's
# requested bytes at the end, over its end state's active blocks (allocated, or freed and waiting
# for their streams, as memory_viz's active memory counts them), and at the peak: the trace's
# allocations until their free_completed, on top of what was live before its first event (the
# end state's active blocks the trace never allocates, and what it frees before allocating).
# stats --json must give the same on every device of every bundled snapshot.
# Left out: files made so that their events do not end at their end state (proto/small_p*: a
# trace's first 300 events with the whole run's segments, for the pickle protocols;
# edge/pending_frees_at_end: frees' completions taken out), and hostile input.
find testdata/snapshots -type f \( -name '*.pickle' -o -name '*.pickle.zst' -o -name '*.pickle.gz' \) \
	! -path '*/hostile/*' ! -path '*/proto/small_p*' ! -name 'pending_frees_at_end*' |
	LC_ALL=C sort >"$TMPDIR/files"
python3 - "$TMPDIR/files" "$MEMSNAP" "$TMPDIR" <<'PY'
import gzip, io, json, pickle, subprocess, sys

class Refuse(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused: %s.%s" % (module, name))

def raw(path):
    data = open(path, "rb").read()
    if path.endswith(".zst"):
        data = subprocess.run(["zstd", "-qdc", path], capture_output=True, check=True).stdout
    elif path.endswith(".gz"):
        data = gzip.decompress(data)
    return data

files = open(sys.argv[1]).read().split()
agree = checked = pagree = pchecked = 0
peaks = {}
for f in files:
    try:
        snap = Refuse(io.BytesIO(raw(f))).load()
    except Exception:
        continue  # not a snapshot this reader takes (memsnap's tests of bad input hold these)
    segs = snap if isinstance(snap, list) else snap.get("segments", [])
    want = {}
    for s in segs:
        want.setdefault(s["device"], 0)
        want[s["device"]] += sum(b.get("requested_size", b["size"]) for b in s["blocks"]
                                 if b["state"] in ("active_allocated", "active_pending_free"))
    if not want:
        continue
    if isinstance(snap, dict):
        for d, tr in enumerate(snap.get("device_traces") or []):
            if not any(e["action"] == "alloc" for e in tr):
                continue
            allocd = {e["addr"] for e in tr if e["action"] == "alloc"}
            init = 0
            for s in segs:
                if s.get("device", 0) != d:
                    continue
                a = s["address"]
                for b in s["blocks"]:
                    if b["state"].startswith("active") and b.get("address", a) not in allocd:
                        init += b.get("requested_size", b["size"])
                    a += b["size"]
            seen = set()
            for e in tr:
                if e["action"] == "alloc":
                    seen.add(e["addr"])
                elif e["action"] == "free_completed" and e["addr"] not in seen:
                    init += e["size"]
                    seen.add(e["addr"])
            cur = peak = init
            live = {}
            for e in tr:
                if e["action"] == "alloc":
                    live[e["addr"]] = e["size"]
                    cur += e["size"]
                    peak = max(peak, cur)
                elif e["action"] == "free_completed":
                    cur -= live.pop(e["addr"], e["size"])
            peaks[(f, d)] = peak
    out = subprocess.run([sys.argv[2], "-q", "stats", "--json", f], capture_output=True, text=True)
    if out.returncode:
        print("%s: stats exit %d" % (f, out.returncode))
        continue
    j = json.loads(out.stdout)
    rows = j if isinstance(j, list) else [j]
    got = {r["device"]: r["end_requested_bytes"] for r in rows if r.get("device") is not None}
    gotp = {r["device"]: r["peak_requested_bytes"] for r in rows if r.get("device") is not None}
    for d, w in sorted(want.items()):
        checked += 1
        if got.get(d) == w:
            agree += 1
        else:
            print("%s device %d: stats %s, the end state %d" % (f, d, got.get(d), w))
    for (pf, d), p in sorted(peaks.items()):
        if pf != f:
            continue
        pchecked += 1
        if gotp.get(d) == p:
            pagree += 1
        else:
            print("%s device %d: peak: stats %s, the reader %d" % (f, d, gotp.get(d), p))
print("%d devices of snapshots with an end state: %d agree at the end" % (checked, agree))
print("%d device traces: %d agree at the peak" % (pchecked, pagree))
PY
