"$MEMSNAP" whatif --limit 12GiB --configs tests/cli/cases/whatif_configs.txt testdata/snapshots/dynamic_oom.pickle
