# What-if against real runs: the default run of testdata/snapshots/settings replayed under each
# other run's PYTORCH_CUDA_ALLOC_CONF (and the limit they all ran under), its peaks and segment
# count compared with what PyTorch reported for that run (NAME.truth.json, recorded on the GPU):
# "same", or how far off. Where they differ, the lines after say whether the run's own allocations
# and frees came in the default run's order (compared by Python on the two snapshots), whether the
# model replays the run itself, and whether the same replay predicts the run once given the
# addresses the run's cudaMalloc calls returned (which decide, among free blocks of one size, which
# a request takes).
d=testdata/snapshots/settings
calls() { zstd -qdc "$1" | python3 -c '
import pickle, sys
snap = pickle.load(sys.stdin.buffer)  # a snapshot of this repository, recorded by its own script
ids, out, n = {}, [], 0
for e in snap["device_traces"][0]:
    if e["action"] == "alloc":
        ids[e["addr"]] = n
        n += 1
        out.append("a %d %d" % (e["size"], e["stream"]))
    elif e["action"] in ("free_requested", "free_completed"):
        out.append("%s %s" % (e["action"][5], ids.get(e["addr"])))
print("\n".join(out))'; }
calls "$d/settings_default.pickle.zst" >"$TMPDIR/default.calls"
# The default run's events with the segment events of run $1 (PyTorch's snapshot layout, JSON)
"$MEMSNAP" convert --format json -o "$TMPDIR/default.json" "$d/settings_default.pickle.zst" 2>/dev/null
with_addresses() {
	"$MEMSNAP" convert --format json -o "$TMPDIR/run.json" "$1" 2>/dev/null
	python3 -c '
import json, sys
d, r = (json.load(open(p)) for p in sys.argv[1:])
SEG = ("segment_alloc", "segment_free", "segment_map", "segment_unmap")
segs, n = [], 0
for e in r["device_traces"][0]:
    if e["action"] in SEG:
        segs.append((n, e))
    n += e["action"] == "alloc"
out, n, i = [], 0, 0
for e in d["device_traces"][0]:
    if e["action"] in SEG:
        continue
    if e["action"] == "alloc":
        while i < len(segs) and segs[i][0] == n:
            out.append(segs[i][1])
            i += 1
        n += 1
    out.append(e)
out += [e for _, e in segs[i:]]
d["device_traces"][0], d["segments"] = out, r["segments"]
json.dump(d, sys.stdout)' "$TMPDIR/default.json" "$TMPDIR/run.json"
}
for n in settings_rp4 settings_expandable settings_ms128 settings_gc06 settings_gc06_ms256 \
	settings_gc04 settings_gc08 settings_gc095 settings_rp_list settings_rp_list_gc06 \
	settings_expandable_rp4 settings_rp8 settings_ms64_gc07 settings_rp2_ms256; do
	conf=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["alloc_conf"])' "$d/$n.truth.json")
	line=$("$MEMSNAP" -q replay --json --limit 6442450944 --alloc-conf "$conf" "$d/settings_default.pickle.zst" |
		python3 -c '
import json, sys
ours = json.load(sys.stdin)
truth = json.load(open(sys.argv[1]))["stats"]
out = []
for ours_key, key in (("peak_reserved_bytes", "reserved_bytes.all.peak"),
                      ("peak_allocated_bytes", "allocated_bytes.all.peak"),
                      ("peak_segments", "segment.all.peak"),
                      ("num_alloc_retries", "num_alloc_retries")):
    diff = ours[ours_key] - truth[key]
    out.append(key.split(".")[0] + (" same" if diff == 0 else " %+d" % diff))
print(sys.argv[2] + ": " + ", ".join(out))' "$d/$n.truth.json" "$conf")
	echo "$line"
	case $line in *+* | *-[0-9]*)
		calls "$d/$n.pickle.zst" >"$TMPDIR/run.calls"
		k=$(cmp "$TMPDIR/default.calls" "$TMPDIR/run.calls" 2>/dev/null | grep -oE 'line [0-9]+' || true)
		if [ -n "$k" ]; then echo "  its calls in the default run's order: no, they differ from call ${k#line }"; else echo "  its calls in the default run's order: yes"; fi
		echo "  verify of the run itself: $("$MEMSNAP" verify --limit 6442450944 "$d/$n.pickle.zst" 2>/dev/null | grep -oE 'identical|DIVERGES')"
		# the same calls, replayed where that run's cudaMalloc put its segments: the default
		# run's trace with its segment events swapped for that run's (by Python, at the same
		# count of allocations), whose addresses the model takes for its own segments
		with_addresses "$d/$n.pickle.zst" >"$TMPDIR/addrs.json"
		"$MEMSNAP" -q replay --json --limit 6442450944 --alloc-conf "$conf" "$TMPDIR/addrs.json" |
			python3 -c '
import json, sys
ours, truth = json.load(sys.stdin), json.load(open(sys.argv[1]))["stats"]
same = ours["peak_reserved_bytes"] == truth["reserved_bytes.all.peak"] and \
    ours["peak_allocated_bytes"] == truth["allocated_bytes.all.peak"] and \
    ours["peak_segments"] == truth["segment.all.peak"]
print("  with that run'"'"'s segment addresses: peaks and segments", "the same" if same else "still differ")' "$d/$n.truth.json"
		;;
	esac
done
# the default run recorded again: the same program, other call order
calls "$d/settings_default_rerun.pickle.zst" >"$TMPDIR/run.calls"
k=$(cmp "$TMPDIR/default.calls" "$TMPDIR/run.calls" 2>/dev/null | grep -oE 'line [0-9]+' || true)
echo "settings_default run again: calls ${k:+differ from call ${k#line }}${k:-the same}; peaks $(python3 -c '
import json, sys
a, b = (json.load(open(p))["stats"] for p in sys.argv[1:])
keys = ("reserved_bytes.all.peak", "allocated_bytes.all.peak", "segment.all.peak")
print("the same" if all(a[k] == b[k] for k in keys) else "differ")' "$d/settings_default.truth.json" "$d/settings_default_rerun.truth.json")"
# every run replays as PyTorch ran it: the snapshots given the limit, the recordings (which mark it)
n=0 same=0
for f in "$d"/*.pickle.zst; do
	n=$((n + 1))
	"$MEMSNAP" -q verify --limit 6442450944 "$f" | grep -q ': identical' && same=$((same + 1))
done
echo "verify of every snapshot with the limit: $same of $n identical"
n=0 same=0
for f in "$d"/settings_*[a-z0-9].zst; do
	case $f in *.pickle.zst) continue ;; esac
	n=$((n + 1))
	"$MEMSNAP" -q verify "$f" | grep -q ': identical' && same=$((same + 1))
done
echo "verify of every recording: $same of $n identical"
