"$MEMSNAP" check --max-peak-reserved 8GiB --max-fragmentation 0.05 testdata/snapshots/gpt_train.pickle.zst
