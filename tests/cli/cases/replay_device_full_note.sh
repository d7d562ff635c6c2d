# A recorded OOM that the replay does not reproduce, where the OOM's device_free (1 MiB) is
# below the segment the request needed (20 MiB): the device itself was full, so no per-process
# limit is inferred, and the note says why (hand-written: testdata/snapshots/edge/README.md).
"$MEMSNAP" replay testdata/snapshots/edge/device_full_missed.json 2>&1 >/dev/null | grep "device itself full"
"$MEMSNAP" -q replay --json testdata/snapshots/edge/device_full_missed.json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("limit inferred:", r["limit_inferred"], "| recorded OOMs", r["recorded_ooms"], "reproduced", r["reproduced_ooms"])'
