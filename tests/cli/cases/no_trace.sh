# A snapshot without a trace (history off: segments on two devices, no events): stats and render
# read its end state; replay, verify and whatif say in one line that they need a trace.
f=testdata/snapshots/versions/no_history_two_devices.pickle
"$MEMSNAP" stats "$f"
"$MEMSNAP" stats --json "$f" | grep -E '"(device|no_trace|count|reserved_bytes|allocated_bytes|fragmentation)"'
"$MEMSNAP" render --format txt "$f"; echo "render: exit $?"
"$MEMSNAP" render --device 1 --format dot "$f" | grep -c 'TABLE'; echo "render --device 1: exit ${PIPESTATUS[0]}"
"$MEMSNAP" render --at peak --format txt "$f"; echo "render --at peak: exit $?"
"$MEMSNAP" replay "$f" 2>/dev/null; echo "replay: exit $?"
"$MEMSNAP" whatif "$f" 2>/dev/null; echo "whatif: exit $?"
"$MEMSNAP" check --max-peak-reserved 1GiB "$f" 2>/dev/null; echo "check: exit $?"
"$MEMSNAP" verify "$f"
