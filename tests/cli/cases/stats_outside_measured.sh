# held against: what each job read itself at its end (truth.json: mem_get_info's total less its
# free bytes, less memory_stats' reserved_bytes.all.current), and replay's measured figure.
# stats' memory outside PyTorch on memsnap's own recordings is the recorder's cudaMemGetInfo
# marks (the device's total less its free bytes and PyTorch's reserved then, as replay takes
# them), never the raw CUDA calls alone shown as the figure: on these jobs every raw call is
# PyTorch's own, and stats once printed "peak 0 bytes" there. The last mark is after the last
# optimizer step, where the job measured its truth (each device the process has a context on is
# marked there; a device marked only as PyTorch first reserved memory on it would give that
# moment's figure, not the end's, and stats says at which event its last mark is).
d=testdata/snapshots/multi_gpu
for truth in "$d"/*.truth.json; do
	tag=$(basename "$truth" .truth.json)
	"$MEMSNAP" stats --json "$d/$tag.zst" 2>/dev/null >"$TMPDIR/stats.json"
	for dev in $(python3 -c 'import json, sys; print(*(json.load(open(sys.argv[1])).get("end") or {}).get("by_device", {}))' "$truth"); do
		"$MEMSNAP" replay --json --device "$dev" "$d/$tag.zst" 2>/dev/null >"$TMPDIR/replay.json"
		python3 - "$truth" "$dev" "$tag" "$TMPDIR/stats.json" "$TMPDIR/replay.json" <<'PY'
import json, sys
truth, dev, tag = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
s = json.load(open(sys.argv[4]))
s = next(o for o in (s if isinstance(s, list) else [s]) if o["device"] == int(dev))
rp = json.load(open(sys.argv[5]))["outside_pytorch_measured"]
e = truth["end"]["by_device"][dev]
want = e["mem_get_info"]["total"] - e["mem_get_info"]["free"] - e["memory_stats"]["reserved_bytes.all.current"]
m = s["outside_pytorch"]["measured"]
print(tag, "device", dev, s["outside_pytorch_is"], "last of", m["marks"], "marks at event",
      m["last_index"], m["last_bytes"], "| the job's own at its end", want,
      "equal" if m["last_bytes"] == want else
      "not the end's (its only mark, as PyTorch first reserved there)" if m["marks"] == 1 else "DIFFERENT",
      "| replay", "agrees" if all(m[k] == rp[k] for k in rp) else "DISAGREES %s" % rp,
      "| raw calls", s["outside_pytorch"]["raw_calls"])
PY
	done
done
# the text says the same
"$MEMSNAP" stats "$d/ddp_rank1.zst" | grep -A1 "^  outside PyTorch"
# no marks, every raw call PyTorch's own: not measured, no figure (it said "peak 0 bytes")
f=testdata/traces/v1.1/recorded_h100_expandable.zst
"$MEMSNAP" stats "$f" | grep "^  outside PyTorch"
"$MEMSNAP" stats --json "$f" | python3 -c 'import json, sys; o = json.load(sys.stdin); print(o["outside_pytorch_is"], o["outside_pytorch"])'
# a PyTorch snapshot: neither marks nor raw calls, no line
"$MEMSNAP" stats "$d/ddp_rank1.pickle.zst" | grep -c "outside PyTorch"
"$MEMSNAP" stats --json "$d/ddp_rank1.pickle.zst" | python3 -c 'import json, sys; o = json.load(sys.stdin); print(o["outside_pytorch_is"], o["outside_pytorch"])'
# a snapshot with no events: no figure and no event for it (it said peak_index 0)
"$MEMSNAP" stats --json testdata/snapshots/real/no_history.pickle | python3 -c 'import json, sys; o = json.load(sys.stdin); print("no events: peak_requested_index", o["peak_requested_index"], "|", o["outside_pytorch_is"], o["outside_pytorch"])'
