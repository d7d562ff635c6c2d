#!/bin/bash
# Step-time overhead of recording a transformer training loop (tests/gpu/train.py), on a GPU:
# no recording; PyTorch's _record_memory_history without stacks and with Python stacks;
# memsnap without stacks and with Python stacks (memsnap.record in the script); memsnap record
# (the launcher: PyTorch hook and CUDA interposer). Each configuration runs ROUNDS times,
# interleaved; each run's median step time is compared with the base run of its own round, and the
# figure is the median of the rounds' overheads, with their range.
# Then the cost per event on the allocating thread, measured where nothing else hides it:
# tests/gpu/alloc_loop.py allocates and frees a small tensor 200000 times (3 events each, no
# GPU work), best of 5 loops, under each recorder; ROUNDS rounds interleaved, the best kept.
# With "alternate", each recorder is instead switched on and off every 2 steps inside one
# process (tests/gpu/train.py --alternate): memsnap with Python stacks against not recording,
# PyTorch's recorder with Python stacks against none; a round is one process per recorder, and
# the figure is the median of the rounds' overheads with their range. The machine's drift moves
# the steps on and off alike, so this is the step-time figure to report.
# usage: bench/record_overhead.sh BUILD_DIR OUT_DIR [ROUNDS] [STEPS] [train|alloc|both|alternate]
set -euo pipefail
build=$(cd "$1" && pwd) out=$2 rounds=${3:-3} steps=${4:-60} what=${5:-both}
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
mkdir -p "$out"
export MEMSNAP_LIBDIR=$build/lib/memsnap
export PYTHONPATH=$build/lib/memsnap/python${PYTHONPATH:+:$PYTHONPATH}
train=("$py" "$here/tests/gpu/train.py" --steps "$steps" --warmup 10)
configs=(base torch_nostacks torch_stacks memsnap_nostacks memsnap_stacks memsnap_launcher)
run() { # file-name-prefix config round program...: one run of the program under one configuration
	local pre=$1 c=$2 r=$3
	shift 3
	local rep=$out/$pre$c.$r.json zst=$out/$pre$c.zst
	case $c in
	base) "$@" --report "$rep" ;;
	torch_nostacks) "$@" --report "$rep" --torch-history none ;;
	torch_stacks) "$@" --report "$rep" --torch-history python ;;
	memsnap_nostacks) "$@" --report "$rep" --memsnap "$zst" ;;
	memsnap_stacks) "$@" --report "$rep" --memsnap "$zst" --stacks python ;;
	memsnap_launcher) "$build/cli/memsnap" record -o "$zst" -- "$@" --report "$rep" ;;
	esac >/dev/null 2>"$out/$pre$c.$r.err"
}
if [ "$what" = alternate ]; then
for r in $(seq 1 "$rounds"); do
	"${train[@]}" --alternate memsnap --memsnap "$out/alt.zst" --stacks python \
		--report "$out/alt.memsnap.$r.json" >/dev/null 2>"$out/alt.memsnap.$r.err"
	"${train[@]}" --alternate torch --report "$out/alt.torch.$r.json" >/dev/null \
		2>"$out/alt.torch.$r.err"
done
"$py" - "$out" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
print("| recorder, Python stacks | rounds | step off (ms, median of rounds) | step on | "
      "overhead (median of rounds) | rounds' range |")
print("|---|---|---|---|---|---|")
for rec in ("memsnap", "torch"):
    reps = [json.load(open(os.path.join(out, f))) for f in sorted(os.listdir(out))
            if f.startswith(f"alt.{rec}.") and f.endswith(".json")]
    o = sorted(x["overhead_pct"] for x in reps)
    print(f"| {rec} | {len(reps)} | {statistics.median(x['off_median_ms'] for x in reps):.3f} | "
          f"{statistics.median(x['on_median_ms'] for x in reps):.3f} | "
          f"{statistics.median(o):+.2f}% | {o[0]:+.2f}% to {o[-1]:+.2f}% |")
PY
exit 0
fi
if [ "$what" != alloc ]; then
for r in $(seq 1 "$rounds"); do
	for c in "${configs[@]}"; do run "" "$c" "$r" "${train[@]}"; done
done
"$py" - "$out" "$build/cli/memsnap" "$steps" "${configs[@]}" <<'PY'
import json, os, statistics, subprocess, sys
out, ms, steps, configs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def step_ms(c, r):
    return json.load(open(os.path.join(out, f"{c}.{r}.json")))["median_ms"]
rounds = sorted({int(f.split(".")[1]) for f in os.listdir(out)
                 if f.startswith("base.") and f.endswith(".json")})
med = {c: statistics.median(step_ms(c, r) for r in rounds) for c in configs}
# each round's overhead against the same round's base run: the machine's drift between rounds
# (larger than the effects measured) cancels, and the spread of the rounds is shown
paired = {c: sorted(100 * (step_ms(c, r) / step_ms("base", r) - 1) for r in rounds) for c in configs}
info = json.loads(subprocess.run([ms, "info", "--json", os.path.join(out, "memsnap_nostacks.zst")],
                                 capture_output=True, text=True).stdout)
n_ev = info["events_total"]
size = os.path.getsize(os.path.join(out, "memsnap_nostacks.zst"))
ev_step = n_ev / (steps + 10)  # warmup steps record too; set-up events are few
print(f"events: {n_ev} in {steps + 10} steps, {ev_step:.0f} per step; "
      f"{size / n_ev:.2f} bytes/event without stacks; {len(rounds)} rounds")
print("| configuration | median step (ms) | overhead (median of rounds) | rounds' range | per event (µs) |")
print("|---|---|---|---|---|")
b = med["base"]
for c in configs:
    o = statistics.median(paired[c])
    per = o / 100 * b * 1e3 / ev_step
    print(f"| {c} | {med[c]:.3f} | {o:+.2f}% | {paired[c][0]:+.2f}% to {paired[c][-1]:+.2f}% "
          f"| {per:+.3f} |")
PY
fi
[ "$what" = train ] && exit 0
loop=("$py" "$here/tests/gpu/alloc_loop.py")
for r in $(seq 1 "$rounds"); do
	for c in "${configs[@]}"; do run alloc. "$c" "$r" "${loop[@]}"; done
done
"$py" - "$out" "${configs[@]}" <<'PY'
import json, os, sys
out, configs = sys.argv[1], sys.argv[2:]
ns = {}
for c in configs:  # the best of the rounds (each itself the best of 5 loops)
    runs = [f for f in os.listdir(out) if f.startswith(f"alloc.{c}.") and f.endswith(".json")]
    ns[c] = min(json.load(open(os.path.join(out, f)))["ns_per_iteration"] for f in runs)
print("| configuration | ns per alloc+free (3 events) | cost per event |")
print("|---|---|---|")
for c in configs:
    print(f"| {c} | {ns[c]:.0f} | {(ns[c] - ns['base']) / 3:+.0f} ns |")
PY
