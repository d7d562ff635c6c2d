# Under a limit that the recorded settings' replay runs out in, where the recorded run did not,
# whatif exits 3 as replay and explain do (README: exit codes); without it, 0.
for cmd in replay explain whatif; do
	"$MEMSNAP" -q $cmd --limit 1GiB testdata/snapshots/gpt_train.pickle.zst >/dev/null 2>&1
	echo "$cmd --limit 1GiB: exit $?"
done
"$MEMSNAP" -q whatif testdata/snapshots/gpt_train.pickle.zst >/dev/null
echo "whatif: exit $?"
