# A dead run never passes check: a recorded OOM fails the gate (exit 5) unless --allow-oom, and
# so does a trace cut short unless --allow-cut-short; each in the JSON.
"$MEMSNAP" check --max-peak-reserved 100GiB testdata/snapshots/dynamic_oom.pickle 2>/dev/null
echo "exit $?"
"$MEMSNAP" check --allow-oom --max-peak-reserved 100GiB testdata/snapshots/dynamic_oom.pickle 2>/dev/null
echo "exit $?"
"$MEMSNAP" -q check --json --max-peak-reserved 100GiB testdata/snapshots/dynamic_oom.pickle |
	grep -E '^\s"(recorded_ooms|oom_allowed|passed)"'
# a replay under a smaller limit stops before the recorded OOM: the run still recorded it
"$MEMSNAP" -q check --json --limit 5GiB testdata/snapshots/dynamic_oom.pickle |
	grep -E '^\s"(recorded_ooms|passed)"|"name":|"value":'
head -c 12000 testdata/snapshots/explain/sgd.zst >"$TMPDIR/sgd_cut.zst"
cd "$TMPDIR" || exit 1
"$MEMSNAP" check --max-peak-reserved 100GiB sgd_cut.zst 2>/dev/null
echo "exit $?"
"$MEMSNAP" check --allow-cut-short --max-peak-reserved 100GiB sgd_cut.zst 2>/dev/null
echo "exit $?"
"$MEMSNAP" -q check --json --max-peak-reserved 100GiB sgd_cut.zst 2>/dev/null |
	grep -E '^\s"(trace_cut_short|cut_short_allowed|passed)"'
