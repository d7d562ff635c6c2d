# Memory held outside PyTorch, seen only at the recorded OOM, is taken as constant over the whole
# run once the device's size is given: the cache PyTorch gave back before the OOM for want of room
# is its retry, not an empty_cache() call, and no setting peaks above what PyTorch could use.
# Judged by the job's own truth: PyTorch's retries, and the device's free bytes just after the
# raw cudaMalloc that held the rest (mem_get_info, before PyTorch allocated anything).
f=testdata/snapshots/real/oom_outside.pickle.zst
t=testdata/snapshots/real/oom_outside.truth.json
size=$(python3 -c "import json; print(json.load(open('$t'))['total_memory'])")
"$MEMSNAP" -q replay --json --device-memory "$size" "$f" >"$TMPDIR/r.json"
"$MEMSNAP" -q whatif --json --device-memory "$size" "$f" >"$TMPDIR/w.json"
python3 - "$t" "$TMPDIR/r.json" "$TMPDIR/w.json" <<'PY'
import json, sys
t, r, w = (json.load(open(p)) for p in sys.argv[1:])
retries = t["at_oom"]["stats"]["num_alloc_retries"]
room = t["outside"]["mem_get_info_after"]["free"]
print("retries", r["num_alloc_retries"], "truth", retries,
      "ok" if r["num_alloc_retries"] == retries else "DIFFERENT")
print("empty_cache calls", r["empty_cache_calls"], "ok" if r["empty_cache_calls"] == 0 else "INVENTED")
for s in w["settings"]:
    print(s["alloc_conf"] or "(recorded)", "peak within the room left beside the outside memory:",
          "ok" if s["peak_reserved_bytes"] <= room else "ABOVE (%d > %d)" % (s["peak_reserved_bytes"], room))
PY
# A device smaller than what the file shows PyTorch could use, or than what was measured held
# outside PyTorch beside its reserved bytes, cannot be the job's: refused, one line, exit 1
V=testdata/snapshots/verdicts
"$MEMSNAP" replay --device-memory 3GiB $V/outside.pickle.zst >/dev/null; echo "exit $?"
"$MEMSNAP" replay --device-memory 100GiB $V/outside_recorded.zst >/dev/null; echo "exit $?"
# a larger device than the recorded one: the outside memory stays as measured, and the OOM goes
"$MEMSNAP" -q replay --json --device-memory 200GiB $V/outside_recorded.zst | python3 -c '
import json, sys
r = json.load(sys.stdin)
d = r["recorded_oom_device"]
print("200 GiB given: device", r["device_memory_bytes"], "recorded", r["device_memory_recorded_bytes"], "| outside at the OOM", d["outside_pytorch_bytes"],
      "| recorded size less reserved and free:", 150109880320 - d["reserved_bytes"] - d["device_free_bytes"],
      "| reproduced OOMs", r["reproduced_ooms"], "| limit inferred", r["limit_inferred"])'
