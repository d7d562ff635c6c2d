# PyTorch writes a snapshot mark for every device's allocator, also for one the process never
# used: memsnap record's trace of a job on device 1 holds two such marks on device 0. They make no
# device used: info, stats and replay speak of device 1 alone (the job's truth: device 1).
f=testdata/snapshots/verdicts/outside_recorded.zst
"$MEMSNAP" info "$f" | grep -E "^used|snapshot"
"$MEMSNAP" stats "$f" 2>&1 | grep -E "^testdata|events:"
"$MEMSNAP" -q replay "$f" | grep -c "other devices"
python3 -c 'import json; print("truth device:", json.load(open("testdata/snapshots/verdicts/outside_recorded.truth.json"))["recorded"]["device"])'
