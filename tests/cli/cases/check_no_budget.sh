# With no budget, check gates only that the run did not die: a run that finished passes, a run
# that recorded an OOM (PyTorch's own, in the job's truth) fails with 5.
"$MEMSNAP" check testdata/snapshots/gpt_train.pickle.zst
echo "exit $?"
"$MEMSNAP" -q check testdata/snapshots/dynamic_oom.pickle
echo "exit $?"
