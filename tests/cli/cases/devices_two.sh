# One process on two devices: each command covers both, each device on its own; --device narrows.
f=testdata/snapshots/devices/two_devices.pickle.zst
"$MEMSNAP" verify "$f" 2>/dev/null; echo "verify: exit $?"
"$MEMSNAP" verify --json "$f" 2>/dev/null | grep -E '"(0|1|identical|device|recorded_ooms|reproduced_ooms)"'
"$MEMSNAP" replay "$f" 2>/dev/null | grep -E '^testdata|peaks|recorded OOMs'; echo "replay: exit ${PIPESTATUS[0]}"
"$MEMSNAP" replay --device 0 --json "$f" | grep -E '^	"(device|events_replayed|events_total)"'
"$MEMSNAP" check --max-peak-reserved 3GiB "$f" 2>/dev/null; echo "check: exit $?"
"$MEMSNAP" whatif --json "$f" 2>/dev/null | grep -E '^		"(0|1)"|"device"|"limit_bytes"'
