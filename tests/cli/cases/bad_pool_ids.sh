# Pool ids memsnap cannot take, in a segment's segment_pool_id and a trace entry's pool_id (made
# here by Python's pickle): one line each, naming the field and what is wrong, exit 1. None is
# read as no pool id (entry_none).
d=$(mktemp -d)
python3 - "$d" <<'PY'
import pickle, sys
seg = lambda pool: {"device": 0, "address": 1 << 21, "total_size": 2 << 20, "allocated_size": 512,
                    "active_size": 512, "requested_size": 512, "stream": 0, "segment_type": "small",
                    "segment_pool_id": pool, "frames": [],
                    "blocks": [{"address": 1 << 21, "size": 512, "requested_size": 512,
                                "state": "active_allocated"},
                               {"address": (1 << 21) + 512, "size": (2 << 20) - 512,
                                "requested_size": 0, "state": "inactive"}]}
entry = lambda pool: {"action": "alloc", "addr": 1 << 21, "size": 512, "stream": 0,
                      "time_us": 1, "frames": [], "pool_id": pool}
cases = {"seg_both_halves": ((3, 4), (0, 0)), "seg_too_large": ((0, 40000), (0, 0)),
         "seg_negative": ((-1, 0), (0, 0)), "seg_three": ((0, 1, 2), (0, 0)),
         "seg_string": ("x", (0, 0)), "entry_both_halves": ((0, 0), (1, 1)),
         "entry_too_large": ((0, 0), (40000, 0)), "entry_negative": ((0, 0), (0, -3)),
         "entry_one": ((0, 0), (7,)), "entry_none": ((0, 0), None)}
for name, (sp, ep) in cases.items():
    with open(f"{sys.argv[1]}/{name}.pickle", "wb") as f:
        pickle.dump({"segments": [seg(sp)], "device_traces": [[entry(ep)]]}, f, protocol=4)
PY
for f in "$d"/*.pickle; do
	"$MEMSNAP" info "$f" >/dev/null 2>"$d/err"
	rc=$?
	echo "$(basename "$f"): exit $rc $(sed "s|$d/||" "$d/err")"
done
rm -rf "$d"
