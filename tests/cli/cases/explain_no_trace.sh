# A snapshot without a trace, taken in the OOM handler of a job whose history was never turned
# on: explain answers from its end state (checked against Python's sums over the pickle's
# segments), and judges the request that failed, given with --request (PyTorch's message:
# "Tried to allocate 1.10 GiB", "7.36 GiB allowed"); without the limit it says what it needs.
f=testdata/snapshots/verdicts/no_history.pickle.zst
"$MEMSNAP" explain "$f"
"$MEMSNAP" -q explain --json --request 1.10GiB --limit 7897874432 "$f" >"$TMPDIR/x.json"
zstd -qdc "$f" >"$TMPDIR/s.pickle"
python3 - "$TMPDIR/s.pickle" "$TMPDIR/x.json" <<'PY'
import json, pickle, sys
segs = pickle.load(open(sys.argv[1], "rb"))["segments"]
x = json.load(open(sys.argv[2]))
alloc = sum(b["size"] for s in segs for b in s["blocks"] if b["state"] == "active_allocated")
free = [b["size"] for s in segs for b in s["blocks"] if b["state"] == "inactive"]
reserved = sum(s["total_size"] for s in segs)
ok = (x["allocated_bytes"], x["reserved_bytes"], x["free_in_reserved_bytes"], x["largest_free_bytes"]) == \
    (alloc, reserved, sum(free), max(free))
print("end state: allocated %d, reserved %d, free %d, largest free %d: %s" % (
    alloc, reserved, sum(free), max(free), "as Python sums the pickle" if ok else "DIFFERS"))
q = x["request"]
print("request %d: fits a free block %s, cause %s (%s)" % (q["bytes"], q["fits_free_block"], q["cause"],
      ", ".join("%s %d" % (c["cause"], c["bytes"]) for c in q["causes"])))
PY
"$MEMSNAP" explain --request 1.10GiB "$f" | grep "a request of"
# two devices, each its own end state
"$MEMSNAP" explain testdata/snapshots/versions/no_history_two_devices.pickle | grep -E "no trace|allocated in"
# a trace records its requests: --request is refused there
"$MEMSNAP" explain --request 1GiB testdata/snapshots/dynamic_oom.pickle; echo "exit $?"
# a limit below what the snapshot holds reserved cannot be the job's: no cause against it
"$MEMSNAP" explain --request 1GiB --limit 2GiB "$f" | head -1
"$MEMSNAP" explain --request 1 "$f" | head -1
