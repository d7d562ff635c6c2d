# check --max-growth-per-step: growth within one run, explain's growing sites' bytes a step
# summed. The leak job keeps 64 MiB of logits a step (its truth: 67108864 bytes a step): over a
# budget of 10 MiB it fails (exit 5), under 100 MiB it passes; a loop that keeps nothing passes
# a budget of one byte; a trace whose steps are found only by repetition (a forward and backward
# of one step: the layers repeat) cannot be checked, and fails.
d=testdata/snapshots/explain
"$MEMSNAP" check --max-growth-per-step 10MiB "$d/leak.pickle.zst"; echo "exit $?"
"$MEMSNAP" check --max-growth-per-step 100MiB "$d/leak.zst"; echo "exit $?"
"$MEMSNAP" check --max-growth-per-step 1 "$d/adamw.pickle.zst"; echo "exit $?"
"$MEMSNAP" -q check --json --max-growth-per-step 10MiB "$d/leak.pickle.zst" | grep -E '^\s"(growth_per_step_bytes|passed)"'
"$MEMSNAP" check --allow-oom --max-growth-per-step 1GiB testdata/snapshots/verdicts/outside.pickle.zst 2>/dev/null; echo "exit $?"
