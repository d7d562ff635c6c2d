# PyTorch writes a snapshot mark for every device's allocator, also for one the process never
# used: memsnap record's trace of a job on device 1 holds two such marks on device 0. They make no
# device used: info, stats and replay speak of device 1 alone (the job's truth: device 1).
f=testdata/snapshots/verdicts/outside_recorded.zst
"$MEMSNAP" info "$f" | grep -E "^used|snapshot"
"$MEMSNAP" stats "$f" 2>&1 | grep -E "^testdata|events:"
"$MEMSNAP" -q replay "$f" | grep -c "other devices"
python3 -c 'import json; print("truth device:", json.load(open("testdata/snapshots/verdicts/outside_recorded.truth.json"))["recorded"]["device"])'
# replay counts a device's events as info does: its own (the other devices' marks in neither)
for f in testdata/snapshots/multi_gpu/ddp_rank1.zst testdata/snapshots/multi_gpu/pipeline.zst; do
	"$MEMSNAP" info "$f" | grep '^used:'
	"$MEMSNAP" replay "$f" 2>/dev/null | grep -E 'replayed [0-9]+ of|other devices:'
done
