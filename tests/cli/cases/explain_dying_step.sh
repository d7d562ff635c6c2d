# A dying step's breakdown: rank 1 of a DDP job ran out of memory in its forward (step 5, after
# four optimizer steps). What that step made and still held at the OOM is its own (activations),
# never "kept across optimizer steps". Checked against Python's own sum over the pickle: the
# blocks allocated after the last optimizer step's end and not freed before the OOM.
f=testdata/snapshots/verdicts/ddp_rank1.pickle.zst
"$MEMSNAP" -q explain --json "$f" >"$TMPDIR/x.json"
zstd -qdc "$f" >"$TMPDIR/s.pickle"
python3 - "$TMPDIR/s.pickle" 1 "$TMPDIR/x.json" <<'PY'
import json, pickle, sys
snap = pickle.load(open(sys.argv[1], "rb"))
dev = int(sys.argv[2])
x = json.load(open(sys.argv[3]))
x = x["devices"][str(dev)] if "devices" in x else x
ends = [a["time_us"] for a in snap["external_annotations"]
        if a["stage"] == "END" and a["name"].startswith("Optimizer.step") and a["device"] == dev]
tr = snap["device_traces"][dev]
oom = max(i for i, e in enumerate(tr) if e["action"] == "oom")
live = {}
for e in tr[:oom]:
    if e["action"] == "alloc" and e["time_us"] > ends[-1]:
        live[e["addr"]] = e["size"]
    elif e["action"] == "free_requested":
        live.pop(e["addr"], None)
held = sum(live.values())
c = x["oom"]["categories"]
print("dying step: made after optimizer step", len(ends), "and held at the OOM:", held,
      "bytes in", len(live), "blocks | explain's activations at the OOM:", c["activations"],
      "ok" if abs(c["activations"] - held) <= 0.01 * held else "DIFFERS", "| other:", c["other"])
PY
"$MEMSNAP" -q explain "$f" | sed -n '/^  out of memory/,/cached_free/p'
