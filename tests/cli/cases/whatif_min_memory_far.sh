# The least memory of a setting that needs far more than the replay's unlimited peak: a job that
# caught a recorded OOM raised during a CUDA graph capture (no retry then) runs on under a limit
# only well above its peak. whatif's answer for expandable_segments:True is checked by replays
# under it and under 0.5% less (the search's precision): the first completes, the second
# reproduces the OOM.
f=testdata/snapshots/pools/graph_capture_blocks_retry.zst
m=$("$MEMSNAP" -q whatif --json --configs <(echo expandable_segments:True) "$f" | python3 -c '
import json, sys
d = json.load(sys.stdin)
d = d[0] if isinstance(d, list) else d
print([s for s in d["settings"] if not s["recorded"]][0]["min_memory_bytes"])')
echo "min memory: $([ "$m" != None ] && echo found || echo none)"
for l in "$m" "$((m - m / 200))"; do
	"$MEMSNAP" -q replay --alloc-conf expandable_segments:True --limit "$l" "$f" |
		grep -q 'reproduced 0' && echo "at $([ "$l" = "$m" ] && echo it || echo 0.5% less): completes" ||
		echo "at $([ "$l" = "$m" ] && echo it || echo 0.5% less): runs out"
done
# under a limit below what the job needed: the replay reproduces the recorded OOM, then runs out
# where the recording did not, and says both
"$MEMSNAP" replay --limit 700MiB "$f" | grep -E '^  ended:|^OOM at'
echo "exit ${PIPESTATUS[0]}"
