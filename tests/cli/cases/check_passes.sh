"$MEMSNAP" check --max-peak-reserved 9GiB --max-peak-allocated 8GiB testdata/snapshots/gpt_train.pickle.zst
