# A limit too small for the first segment: the replay holds nothing before its OOM, and explain
# gives no breakdown over zero bytes (one line says why), only the OOM.
"$MEMSNAP" -q explain --limit 1MiB testdata/snapshots/gpt_train.pickle.zst | sed -n 1,3p
