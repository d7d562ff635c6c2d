# A trace cut short (rank 0 of the OOM job, killed: no END record) holds part of the run: stats
# on it alone says so and gives its peak as "at least", as the table of several files (">=") and
# its JSON (peak_is_lower_bound, cut_short) do; a whole trace's peak is a plain figure in all
# three. (It once printed the cut trace's peak alone as a plain fact.)
d=testdata/snapshots/multi_gpu
"$MEMSNAP" stats "$d/oom_rank1_rank0.zst" 2>&1 | sed -n '1,5p'
for f in oom_rank1_rank0.zst oom_rank1_rank1.zst ddp_rank0.zst; do
	text=$("$MEMSNAP" stats "$d/$f" 2>/dev/null | grep "^  peak requested:")
	table=$("$MEMSNAP" stats "$d/$f" "$d/ddp_rank1.zst" 2>/dev/null | grep "^$d/$f  *[0-9]" | awk '{print $4, $5}')
	"$MEMSNAP" stats --json "$d/$f" 2>/dev/null | python3 -c '
import json, sys
o = json.load(sys.stdin)
text, table = sys.argv[1], sys.argv[2]
lb = o["peak_is_lower_bound"]
said = ("at least" in text, table.startswith(">="))
print(sys.argv[3], "cut_short", o["cut_short"], "peak_is_lower_bound", lb, "| text says at least:",
      said[0], "| table:", table, "|", "agree" if said == (lb, lb) else "DISAGREE")' "$text" "$table" "$f"
done
