# diff says first what the two runs ran with, where it differs: the same job recorded under the
# default settings and under expandable segments (each snapshot records its settings), and a
# snapshot against a memsnap recording of another job on another GPU and limit
"$MEMSNAP" diff testdata/snapshots/settings/settings_default.pickle.zst \
	testdata/snapshots/settings/settings_expandable.pickle.zst 2>/dev/null | sed -n '1,4p'
"$MEMSNAP" diff testdata/snapshots/explain/adamw.zst testdata/snapshots/verdicts/frag.pickle.zst 2>/dev/null |
	sed -n '1,/^$/p'
"$MEMSNAP" -q diff --json testdata/snapshots/settings/settings_default.pickle.zst \
	testdata/snapshots/settings/settings_expandable.pickle.zst | python3 -c '
import json, sys
d = json.load(sys.stdin)["ran_with_differs"]
print("json:", {k: v["differs"] for k, v in d.items()})'
# the same job as a snapshot and as memsnap's recording: the snapshot's inferred limit (4.97 to
# 5.11 GiB) holds the recording's 5 GiB, so no limit is listed; the device only "may differ"
"$MEMSNAP" -q diff testdata/snapshots/verdicts/ddp_rank1.pickle.zst \
	testdata/snapshots/verdicts/ddp_recorded_rank1.zst | sed -n '1,/^$/p'
# a run that does not record its settings (PyTorch 2.0 wrote none) was replayed with the
# defaults but may have run with others: against recorded defaults, "may differ" (null), never
# "the same"
"$MEMSNAP" -q diff testdata/snapshots/versions/v2_0_history_blocks.pickle \
	testdata/snapshots/settings/settings_default.pickle.zst | sed -n '/may differ/,/^$/p' | grep -A1 "allocator settings"
"$MEMSNAP" -q diff --json testdata/snapshots/versions/v2_0_history_blocks.pickle \
	testdata/snapshots/settings/settings_default.pickle.zst | python3 -c '
import json, sys
print("json: alloc_conf differs:", json.load(sys.stdin)["ran_with_differs"]["alloc_conf"]["differs"])'
