# A trace cut short (rank 0 of oom_rank1, killed: no END record) converted to PyTorch's JSON, to a
# memsnap trace, and from that JSON to a trace again stays cut short in every command: info says
# so, stats' peak is a lower bound, replay says trace_cut_short, and check fails it as a dead
# run (exit 5) whatever the budget. A complete recording converted stays complete.
M=testdata/snapshots/multi_gpu
"$MEMSNAP" -q convert $M/oom_rank1_rank0.zst -o "$TMPDIR/c.json"
"$MEMSNAP" -q convert $M/oom_rank1_rank0.zst -o "$TMPDIR/c.zst"
"$MEMSNAP" -q convert "$TMPDIR/c.json" -o "$TMPDIR/cj.zst"
"$MEMSNAP" -q convert $M/ddp_rank1.zst -o "$TMPDIR/whole.json"
for f in $M/oom_rank1_rank0.zst "$TMPDIR/c.json" "$TMPDIR/c.zst" "$TMPDIR/cj.zst" "$TMPDIR/whole.json"; do
	i=$("$MEMSNAP" -q info --json "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cut_short"])')
	s=$("$MEMSNAP" -q stats --json "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_is_lower_bound"])')
	r=$("$MEMSNAP" -q replay --json "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["trace_cut_short"])')
	"$MEMSNAP" -q check --max-peak-reserved 100G "$f" >/dev/null
	echo "${f##*/}: info cut_short $i, stats lower bound $s, replay cut short $r, check exit $?"
done
