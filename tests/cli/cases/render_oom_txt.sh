# the state at the recorded OOM of dynamic_oom: PyTorch's message (dynamic_oom.truth.json)
# says 9.02 GiB allocated and 1.32 GiB reserved but unallocated, so 10.34 GiB reserved
"$MEMSNAP" render testdata/snapshots/dynamic_oom.pickle
