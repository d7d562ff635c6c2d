# Why an OOM happened, three ways: a 1.5 MiB request whose 20 MiB segment did not fit beside
# the segments though the bytes did (segment size; edge/stacks_all, a hand-made trace
# described in edge/README.md); a real job whose free cached bytes were held in segments in
# blocks too small (fragmentation; explain/frag_oom under the limit it ran with, truth.json),
# which a real rerun under expandable segments completed; and a limit below what is allocated
# plus the request (demand).
lim=$(python3 -c 'import json; print(json.load(open("testdata/snapshots/explain/frag_oom.truth.json"))["limit_bytes"])')
for a in "edge/stacks_all.pickle" "explain/frag_oom.pickle.zst --limit $lim" \
	"explain/frag_oom.pickle.zst --limit 900MiB"; do
	set -- $a
	f=$1
	shift
	"$MEMSNAP" -q explain --json "testdata/snapshots/$f" "$@" | python3 -c '
import json, sys; o = json.load(sys.stdin)["oom"]
print(sys.argv[1], o["cause"], "fits_without_fragmentation", o["fits_without_fragmentation"],
      "new segment", o["new_segment_bytes"] >> 20, "MiB")' "$f $*"
	"$MEMSNAP" -q explain "testdata/snapshots/$f" "$@" | grep -E "^    (fragmentation|demand|segment size)" | cut -c1-72
done
# who held the memory at the OOM: the sites of what was allocated, which add up to what the
# replay had allocated there (one 400 MiB tensor, at the line of the script that made it)
"$MEMSNAP" -q explain --json testdata/snapshots/explain/frag_oom.pickle.zst --limit "$lim" | python3 -c '
import json, sys; o = json.load(sys.stdin)["oom"]
h = o["holders"]
print("holders:", len(h), "sum equals allocated:", sum(x["bytes"] for x in h) == o["allocated_bytes"],
      "top:", h[0]["bytes"] >> 20, "MiB at", h[0]["site"].rsplit("/", 1)[-1])'
