# Windows of a run: --from/--to by event or by a mark the recording carries (a phase's start and
# end), and --windows PREFIX (one a phase); replay, check and explain measure the window alone.
# Their figures are judged against memory_viz's arithmetic and PyTorch's own by judge_windows.
s=testdata/snapshots/gpt_train.pickle.zst
step='mark:Optimizer.step#AdamW.step#2'
"$MEMSNAP" -q replay --windows Optimizer.step "$s" | grep window | head -3
"$MEMSNAP" -q replay --json --from "$step" --to "$step" "$s" |
	python3 -c 'import json,sys; w=json.load(sys.stdin)["windows"]; print(w)'
# the budget of one window: the second optimizer step allocates 634 MiB more than it starts with
"$MEMSNAP" -q check --from "$step" --to "$step" --max-peak-allocated 3.5GiB "$s"
echo "exit $?"
"$MEMSNAP" -q check --json --from 20000 --max-peak-allocated 8GiB "$s" |
	python3 -c 'import json,sys; c=json.load(sys.stdin); print(c["passed"], c["window"])'
"$MEMSNAP" -q explain --from "$step" --to "$step" "$s" | sed -n 2,3p
# what is not there: one line, exit 1; what is not a window: a usage error, exit 2
"$MEMSNAP" -q replay --from mark:no_such_phase "$s"
echo "exit $?"
"$MEMSNAP" -q replay --from 100 --to 30000 "$s"
echo "exit $?"
"$MEMSNAP" -q replay --from 5 --to 3 "$s" 2>&1 | head -1
"$MEMSNAP" -q replay --from mark: "$s" 2>&1 | head -1
"$MEMSNAP" -q check --windows x "$s" 2>&1 | head -1
# stats reads a window from the trace alone: requested bytes, reserved from the segment events
# (placed against the end state); a phase a window; a window on each device of a file
"$MEMSNAP" -q stats --windows Optimizer.zero_grad "$s" | grep '^window' | head -2
"$MEMSNAP" -q stats --from 0 testdata/snapshots/devices/two_devices.pickle.zst | grep '^window'
"$MEMSNAP" -q stats --json --from 1000 --to 1001 testdata/traces/dynamic_oom_from2000.zst |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["windows"])'
"$MEMSNAP" -q stats --from mark:nope "$s"
echo "exit $?"
# a window that starts where empty_cache() is marked has the state before the mark's release
# (the recording frees the segments in the events after it), as stats reads it from the events
e=testdata/snapshots/explain/empty_cache.zst
"$MEMSNAP" -q replay --from 1182 --to 1194 "$e" | grep -o 'reserved [^;]*'
"$MEMSNAP" -q stats --from 1182 --to 1194 "$e" | grep -o 'reserved .*'
# torch.profiler's "ProfilerStep#N": the whole name where the trace has it; how many there are
p=testdata/snapshots/explain/profiler.pickle.zst
"$MEMSNAP" -q replay --from 'mark:ProfilerStep#1' --to 'mark:ProfilerStep#1' "$p" | grep -o 'events [0-9]* to [0-9]*'
"$MEMSNAP" -q replay --to 'mark:Optimizer.step#AdamW.step#99' "$s" 2>&1
"$MEMSNAP" -q replay --from 'mark:Optimizer.step#AdamW.step#3' --to 'mark:Optimizer.step#AdamW.step#2' "$s" 2>&1
# by time after the first event (a unit always given); no event between 2 s and 3 s here
"$MEMSNAP" -q replay --from 7s "$s" | grep -o 'window events [0-9]* to [0-9]*'
"$MEMSNAP" -q stats --from 2s --to 3000ms "$s" | grep -o 'window events [0-9]* to [0-9]*'
"$MEMSNAP" -q replay --from 1.5 "$s" 2>&1 | head -1
"$MEMSNAP" -q replay --from 100s "$s" 2>&1
# each end on its own: a whole name ("ProfilerStep#1", "ProfilerStep#0") or NAME#N; a window the
# replay runs out of memory inside ends where it stopped; a --to mark at the --from event
"$MEMSNAP" -q replay --from 'mark:ProfilerStep#1' --to 'mark:Optimizer.step#AdamW.step#3' "$p" | grep -o 'window events [0-9]* to [0-9]*'
"$MEMSNAP" -q stats --from 'mark:Optimizer.step#AdamW.step#2' --to 'mark:ProfilerStep#3' "$p" | grep -o 'window events [0-9]* to [0-9]*'
"$MEMSNAP" -q replay --from 'mark:ProfilerStep#0' --to 'mark:ProfilerStep#0' "$p" | grep -o 'window events [0-9]* to [0-9]*'
"$MEMSNAP" -q replay --limit 3GiB --from 100 "$s" | grep -o 'window events [0-9]* to [0-9]* ([^)]*)'
"$MEMSNAP" -q stats --from 1156 --to 'mark:ProfilerStep#0#1' "$p" | grep -o 'window events [0-9]* to [0-9]*'
