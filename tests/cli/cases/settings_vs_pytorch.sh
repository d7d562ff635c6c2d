# What-if against real runs: the default run of testdata/snapshots/settings replayed under each
# other run's PYTORCH_CUDA_ALLOC_CONF (and the limit they all ran under), its peaks compared with
# what PyTorch reported for that run (NAME.truth.json, recorded on the GPU). A line says "same"
# or how far off the model is; the expectation pins today's answers, known gaps included.
d=testdata/snapshots/settings
for n in settings_rp4 settings_expandable settings_ms128 settings_gc06 settings_gc06_ms256; do
	conf=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["alloc_conf"])' "$d/$n.truth.json")
	"$MEMSNAP" -q replay --json --limit 6442450944 --alloc-conf "$conf" "$d/settings_default.pickle.zst" |
		python3 -c '
import json, sys
ours = json.load(sys.stdin)
truth = json.load(open(sys.argv[1]))["stats"]
out = []
for ours_key, key in (("peak_reserved_bytes", "reserved_bytes.all.peak"),
                      ("peak_allocated_bytes", "allocated_bytes.all.peak"),
                      ("num_alloc_retries", "num_alloc_retries")):
    diff = ours[ours_key] - truth[key]
    out.append(key.split(".")[0] + (" same" if diff == 0 else " %+d" % diff))
print(sys.argv[2] + ": " + ", ".join(out))' "$d/$n.truth.json" "$conf"
done
