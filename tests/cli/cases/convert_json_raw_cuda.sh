# memsnap's recording of a DDP rank converted to PyTorch's JSON form: PyTorch's tools (memory_viz)
# read segment_alloc entries as the allocator's segments, so the raw CUDA calls the recorder saw
# are entries of an action of their own (cuda_segment_alloc), which those tools pass over; read
# back, they are raw calls again (info's sources, replay's peaks and memory outside PyTorch as
# from the trace), the JSON is not taken for PyTorch 2.12's (its pool ids are memsnap's), and the
# time span is the trace's although the JSON lists each device's events apart.
set -eo pipefail
f=testdata/snapshots/multi_gpu/ddp_rank1.zst
"$MEMSNAP" -q convert "$f" -o "$TMPDIR/d.json"
python3 - "$TMPDIR/d.json" <<'PY'
import collections, json, sys
j = json.load(open(sys.argv[1]))
acts = collections.Counter(e["action"] for tr in j["device_traces"] for e in tr)
print("actions:", ", ".join("%s %d" % kv for kv in sorted(acts.items())))
print("entries with a 'source' key:", sum("source" in e for tr in j["device_traces"] for e in tr))
PY
for x in "$f" "$TMPDIR/d.json"; do
	"$MEMSNAP" info "$x" | grep -E '^(sources|time span):'
	"$MEMSNAP" -q replay --json "$x" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("peaks", r["peak_reserved_bytes"], r["peak_allocated_bytes"], "outside last",
      r["outside_pytorch_measured"]["last_bytes"])'
done
"$MEMSNAP" replay "$TMPDIR/d.json" 2>&1 >/dev/null | grep -c "written by PyTorch" || true
