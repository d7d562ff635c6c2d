# What-if against real runs: the default run of testdata/snapshots/settings replayed under each
# other run's PYTORCH_CUDA_ALLOC_CONF (and the limit they all ran under), its peaks and segment
# count compared with what PyTorch reported for that run (NAME.truth.json, recorded on the GPU):
# "same", or how far off. Where they differ, the two runs did not make the same calls: the line
# after says whether the run's own allocations and frees came in the default run's order (compared
# by Python on the two snapshots), and verify says whether the model replays the run itself.
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
for n in settings_rp4 settings_expandable settings_ms128 settings_gc06 settings_gc06_ms256 \
	settings_gc04 settings_gc08 settings_gc095; do
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
		;;
	esac
done
# the default run recorded again: the same program, other call order
calls "$d/settings_default_rerun.pickle.zst" >"$TMPDIR/run.calls"
k=$(cmp "$TMPDIR/default.calls" "$TMPDIR/run.calls" 2>/dev/null | grep -oE 'line [0-9]+' || true)
echo "settings_default run again: calls ${k:+differ from call ${k#line }}${k:+;} peaks $(python3 -c '
import json, sys
a, b = (json.load(open(p))["stats"] for p in sys.argv[1:])
keys = ("reserved_bytes.all.peak", "allocated_bytes.all.peak", "segment.all.peak")
print("the same" if all(a[k] == b[k] for k in keys) else "differ")' "$d/settings_default.truth.json" "$d/settings_default_rerun.truth.json")"
