# A rank's snapshot has its events on the rank's device (here 1): every command is about it.
f=testdata/snapshots/devices/rank1_dynamic_oom.pickle.zst
"$MEMSNAP" replay "$f" 2>/dev/null | head -5; echo "replay: exit ${PIPESTATUS[0]}"
"$MEMSNAP" verify "$f" 2>/dev/null; echo "verify: exit $?"
"$MEMSNAP" check --max-peak-reserved 1GiB "$f" 2>/dev/null; echo "check: exit $?"
"$MEMSNAP" replay --json "$f" 2>/dev/null | grep -E '^	"(device|events_replayed|peak_reserved_bytes|recorded_ooms|reproduced_ooms)"'
"$MEMSNAP" replay --device 0 "$f"; echo "replay --device 0: exit $?"
"$MEMSNAP" replay --device 7 "$f"; echo "replay --device 7: exit $?"
