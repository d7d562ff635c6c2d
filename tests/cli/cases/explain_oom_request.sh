# A replay with more memory than the recorded run had serves the request the run failed on:
# explain counts it apart (oom_request), not as the blocks' rounding, and the categories still
# add up to the bytes allocated at the peak. Checked against the OOM entry PyTorch wrote (read
# by Python from the snapshot) and against the replay without a limit, which serves nothing.
# Where a trace cannot tell parameters, gradients and optimizer state (no optimizer steps),
# explain and diff give no figure for them (null, "-"), not 0.
d=$(mktemp -d)
snap=testdata/snapshots/dynamic_oom.pickle
"$MEMSNAP" -q explain --json --limit 14GiB "$snap" >"$d/lim.json"
echo "explain --limit 14GiB: exit $?"
"$MEMSNAP" -q explain --json "$snap" >"$d/rec.json"
echo "explain as recorded: exit $?"
python3 - "$d" "$snap" <<'PY'
import json, pickle, sys
d, snap = sys.argv[1], sys.argv[2]
entries = pickle.load(open(snap, "rb"))["device_traces"][0]   # the project's own recording
oom = [e for e in entries if e["action"] == "oom"]
asked = oom[0]["size"]
for name in ("lim", "rec"):
    e = json.load(open(f"{d}/{name}.json"))
    c = e["categories"]
    req = c["recorded_oom_request"]
    told = sum(v for k, v in c.items() if k in ("parameters", "gradients", "optimizer_state",
                                                "activations", "other", "unplaced") and v)
    alloc = e["peak"]["allocated_bytes"]
    print(f"{name}: oom_request {'the failed request' if asked <= req < asked + (2 << 20) else req}"
          f" ({'none' if req == 0 else 'served'}), rounding below 1% of the peak: "
          f"{0 <= c['rounding'] < alloc / 100}, categories + rounding + oom_request = allocated: "
          f"{told + c['rounding'] + req == alloc}")
PY
"$MEMSNAP" -q explain --limit 14GiB "$snap" | grep -E "^    (rounding|oom_request)" | cut -c1-60
# b starts mid-run: its parameters (made before) are not found, and so not told
"$MEMSNAP" -q diff testdata/snapshots/explain/adamw.pickle.zst testdata/snapshots/real/late_history.pickle.zst |
	grep -E "parameters|gradients|optimizer_state" | cut -c1-90
"$MEMSNAP" -q diff --json testdata/snapshots/explain/adamw.pickle.zst testdata/snapshots/real/late_history.pickle.zst |
	python3 -c 'import json, sys; c = json.load(sys.stdin)["categories"]
print("diff json:", {k: (c[k]["a"] is not None, c[k]["b"]) for k in ("parameters", "gradients", "optimizer_state")})'
"$MEMSNAP" -q explain --json testdata/snapshots/versions/v2_1_no_time.pickle |
	python3 -c 'import json, sys; c = json.load(sys.stdin)["categories"]
print("explain json:", {k: c[k] for k in ("parameters", "gradients", "optimizer_state")})'
rm -rf "$d"
