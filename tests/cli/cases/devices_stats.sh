# stats never adds devices together: a file with two devices gives a section (or a JSON entry)
# for each; the table of several files (ranks) names each row's device.
"$MEMSNAP" stats testdata/snapshots/devices/two_devices.pickle.zst | grep -E '^testdata|peak requested|end state'
"$MEMSNAP" stats --json testdata/snapshots/devices/two_devices.pickle.zst | grep -E '^		"(device|peak_requested_bytes)"'
"$MEMSNAP" stats testdata/snapshots/dynamic_oom.pickle testdata/snapshots/devices/rank1_dynamic_oom.pickle.zst testdata/snapshots/devices/two_devices.pickle.zst
