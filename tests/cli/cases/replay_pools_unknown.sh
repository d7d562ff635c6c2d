# held against: "$MEMSNAP" replay --json FILE, allocations_pool_unknown
# A PyTorch 2.11 snapshot records no pool per event; its end state tells the pool of every
# allocation made in a segment still alive at the end. Only the allocations in segments given
# back before the end are unknown. An independent count (a restricted unpickler, the trace's
# segment_alloc and segment_free followed by address) must equal replay's.
set -eo pipefail
for f in testdata/snapshots/dynamic_empty_cache.pickle.zst testdata/snapshots/gpt_train.pickle.zst \
	testdata/snapshots/multi_gpu/ddp_rank1.pickle.zst; do
	zstd -qdc "$f" >"$TMPDIR/s.pickle"
	want=$(python3 - "$TMPDIR/s.pickle" <<'PY'
import pickle, sys
class Refuse(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused")
snap = Refuse(open(sys.argv[1], "rb")).load()
for d, tr in enumerate(snap["device_traces"]):
    if not any(e["action"] == "alloc" for e in tr):
        continue
    # each segment made in the trace, and the allocations made in it; one older than the
    # trace is alive at the end
    segs = []   # [addr, size, alive, allocations]
    old = [[s["address"], s["total_size"], True, 0] for s in snap["segments"] if s["device"] == d]
    unknown = 0
    for e in tr:
        if e["action"] == "segment_alloc":
            segs.append([e["addr"], e["size"], True, 0])
        elif e["action"] == "segment_free":
            for s in segs:
                if s[2] and s[0] == e["addr"]:
                    s[2] = False
        elif e["action"] == "alloc":
            home = [s for s in segs if s[2] and s[0] <= e["addr"] < s[0] + s[1]]
            if not home:
                home = [s for s in old if s[0] <= e["addr"] < s[0] + s[1]]
            if home:
                home[0][3] += 1
            else:
                unknown += 1
    unknown += sum(s[3] for s in segs if not s[2])
    print(d, unknown)
PY
)
	got=$("$MEMSNAP" -q replay --json "$f" | python3 -c '
import json, sys
j = json.load(sys.stdin)
for r in (j if isinstance(j, list) else [j]):
    print(r["device"], r["allocations_pool_unknown"])')
	echo "$f: $got"
	[ "$got" = "$want" ] || echo "the independent count: $want"
done
