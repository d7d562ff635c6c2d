# held against: each end state's allocated blocks, read from the pickle apart from memsnap (a
# restricted unpickler: the requested bytes of its active_allocated blocks, what is live at its
# end), and stats on each file alone (its text's "live at end", its JSON's live_at_end.bytes).
# The table of several files once showed only the blocks made in the trace (0 bytes for a trace
# that starts mid-run: late_wrap's 153 live blocks are all from before it) and "-" for a snapshot
# without a trace, where stats on the file alone gives its end state's.
python3 - "$MEMSNAP" testdata/snapshots/multi_gpu/late_wrap.pickle.zst testdata/snapshots/multi_gpu/ddp_rank0.pickle.zst -- \
	testdata/snapshots/real/no_history.pickle testdata/snapshots/real/no_traces.pickle <<'PY'
import io, json, re, subprocess, sys
sys.path.insert(0, "tests/judge")
from snapshot_reader import Refuse, raw

def size(n):  # PyTorch's format_size, as memsnap prints sizes
    for lim, div, unit in ((1024, 1, "bytes"), (1 << 20, 1024, "KiB"), (1 << 30, 1 << 20, "MiB")):
        if n <= lim:
            return "%d bytes" % n if unit == "bytes" else "%.2f %s" % (n / div, unit)
    return "%.2f GiB" % (n / (1 << 30))

memsnap, args = sys.argv[1], sys.argv[2:]
groups = [args[:args.index("--")], args[args.index("--") + 1:]]
for files in groups:
    table = subprocess.run([memsnap, "stats"] + files, capture_output=True, text=True).stdout
    for f in files:
        row = next(l for l in table.splitlines() if l.startswith(f + " "))
        cell = re.split(r"\s{2,}", row.strip())[6]  # file, device, events, peak, vs, at, live
        alone = json.loads(subprocess.run([memsnap, "stats", "--json", f], capture_output=True,
                                          text=True).stdout)
        text = subprocess.run([memsnap, "stats", f], capture_output=True, text=True).stdout
        m = re.search(r"^  live at end: +\d+ allocations?, (\d+(?:\.\d+)? (?:bytes|KiB|MiB|GiB))", text, re.M)
        snap = Refuse(io.BytesIO(raw(f))).load()
        segs = snap["segments"] if isinstance(snap, dict) else snap
        want = sum(b.get("requested_size", b["size"]) for s in segs for b in s["blocks"]
                   if b["state"] == "active_allocated")
        print(f, "| table:", cell, "| alone, JSON:", alone["live_at_end"]["bytes"],
              "text:", m.group(1) if m else "(no line: no trace)",
              "| the pickle's end state:", want,
              "agree" if cell == size(want) == size(alone["live_at_end"]["bytes"]) and
              (not m or m.group(1) == cell) else "DISAGREE")
PY
