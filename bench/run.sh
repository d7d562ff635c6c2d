#!/usr/bin/env bash
# Parse benchmarks, all in one run on one machine (see bench/README.md):
#  1. PyTorch snapshot import: memsnap (bench_parse, in-process, best run) against Python's
#     pickle.load on the same files (best run), entries/s and the ratio;
#  2. .zst decode speed on one core, on a long trace (N copies of a real training run);
#  3. bytes per event of each real trace converted at zstd level 3.
# Usage: bench/run.sh [BUILD_DIR] [SNAPSHOT_DIR]   (defaults: build, testdata/snapshots)
# BENCH_ONLY=import runs section 1 alone.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
src_snaps=${2:-testdata/snapshots}
bp=$build/bench/bench_parse
ms=$build/cli/memsnap
[ -x "$bp" ] || { echo "build first: make build" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. bench/snapshots.sh
snaps=$tmp/snaps
plain_snapshots "$src_snaps" "$snaps"

echo "# memsnap parse benchmarks"
echo
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(uname -sr)"
echo "python: $(python3 --version 2>&1); memsnap $($ms version | head -1 | cut -d' ' -f2)"
echo "date: $(date -u +%Y-%m-%d)"
echo
echo "## 1. Snapshot import (entries/s; best of >= 5 runs and >= 0.5 s, and the first run)"
echo
echo "The first run of a process pays its page faults; it is what one \`memsnap\` command sees."
echo "\"Fast path off\" is memsnap's best run with the unpickler's fast path for trace entries off"
echo "(every entry read by the general opcode loop); the \"fast path\" column is the share of"
echo "entries the fast path reads."
echo
echo "Python and memsnap take turns on each file, and each round goes over all files (ROUNDS,"
echo "default 5): a shared machine's speed drifts over seconds, and a slow spell then costs each"
echo "file a round, not all of one file's. Best runs are the best of all rounds, first runs the"
echo "median of the rounds' (each round a new process), and the last ratio column the lowest and"
echo "highest of the rounds' own best-run ratios."
echo
echo "| snapshot | entries | Python best | memsnap best | ratio | Python first | memsnap first | ratio | fast path off | fast path | ratio by round |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for ((r = 0; r < ${ROUNDS:-5}; r++)); do
	for f in "$snaps"/*.pickle; do
		py=$(python3 - "$f" <<'PY'
import pickle, sys, time
f = sys.argv[1]
best, first, total, n, runs = 1e9, None, 0.0, 0, 0
while runs < 5 or total < 0.5:
    t = time.perf_counter()
    with open(f, "rb") as fh:
        d = pickle.load(fh)   # the benchmark's own trusted test files
    t = time.perf_counter() - t
    first = t if first is None else first
    best, total, runs = min(best, t), total + t, runs + 1
    n = sum(len(x) for x in d["device_traces"])
    # Free the result outside the timed part: rebinding d to the next load would free this
    # one inside it (13% to 28% of the time on these files), and memsnap's timing leaves
    # the release of its own result out too.
    del d
print(n, n / best, n / first)
PY
)
		read -r n pyr pyf <<<"$py"
		read -r msr msf fast <<<"$($bp import "$f" | awk '{print $8, $10, $12}')"
		gen=$($bp import --general "$f" | awk '{print $8}')
		echo "$n $pyr $msr $pyf $msf $gen $fast" >>"$tmp/rounds.$(basename "$f")"
	done
done
for f in "$snaps"/*.pickle; do
	cp "$tmp/rounds.$(basename "$f")" "$tmp/rounds"
	med() { awk -v c="$1" '{print $c}' "$tmp/rounds" | sort -g |
		awk '{a[NR] = $1} END {print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
	awk -v f="$(basename "$f")" -v pyf="$(med 4)" -v msf="$(med 5)" '
		{ n = $1; fast = $7; r = $3 / $2
		  if ($2 > pyr) pyr = $2; if ($3 > msr) msr = $3; if ($6 > gen) gen = $6
		  if (NR == 1 || r < rlo) rlo = r; if (r > rhi) rhi = r }
		END {
		  printf "| %s | %d | %.2f M/s | %.2f M/s | %.1fx | %.2f M/s | %.2f M/s | %.1fx | %.2f M/s | %.1f%% | %.1fx to %.1fx |\n",
			f, n, pyr / 1e6, msr / 1e6, msr / pyr, pyf / 1e6, msf / 1e6, msf / pyf,
			gen / 1e6, 100 * fast / n, rlo, rhi }' "$tmp/rounds"
done
# BENCH_ONLY=import: the import table alone (e.g. on a machine without zstd or bc)
[ "${BENCH_ONLY:-}" = import ] && exit 0
echo
echo "## 2. .zst decode (one core)"
echo
src=$snaps/dynamic_seq.pickle
$bp long "$src" "$tmp/long.zst" 150 >"$tmp/long.txt"
read -r _ ev _ bytes _ bpe <"$tmp/long.txt"
dec=$($bp decode "$tmp/long.zst" | awk '{print $8}')
ztime=$( { /usr/bin/time -f %e zstd -qdc "$tmp/long.zst" >/dev/null; } 2>&1 )
printf "long trace: 150 x dynamic_seq = %d events, %d bytes (%.2f B/event)\n\n" "$ev" "$bytes" "$bpe"
printf "| decoder | events/s |\n|---|---|\n"
printf "| memsnap (decode + every event to a sink) | %.1f M/s |\n" "$(echo "$dec / 1000000" | bc -l)"
printf "| zstd -dc alone (decompression only, for scale) | %.1f M/s |\n" "$(echo "$ev / $ztime / 1000000" | bc -l)"
echo
echo "## 3. Replay (one core: decode + allocator model, every event)"
echo
t0=$(date +%s.%N)
$ms replay "$tmp/long.zst" >/dev/null
t1=$(date +%s.%N)
printf "| trace | events | seconds | events/s |\n|---|---|---|---|\n"
printf "| 150 x dynamic_seq | %d | %.2f | %.1f M/s |\n" "$ev" "$(echo "$t1 - $t0" | bc -l)" \
	"$(echo "$ev / ($t1 - $t0) / 1000000" | bc -l)"
echo
$bp long "$src" "$tmp/m1.zst" 15 >/dev/null
t0=$(date +%s.%N)
$ms whatif "$tmp/m1.zst" >/dev/null 2>&1
t1=$(date +%s.%N)
printf "whatif, 11 settings (each with its least-memory search) over 15 x dynamic_seq (%d events), %d cores: %.1f s\n" \
	"$(($ev / 10))" "$(nproc)" "$(echo "$t1 - $t0" | bc -l)"
echo
echo "## 4. Bytes per event (zstd level 3, 1 MiB frames, whole file: header, segments, trailer)"
echo
echo "| trace | events | pickle B/entry | .zst B/event |"
echo "|---|---|---|---|"
for f in "$snaps"/*.pickle; do
	$ms convert "$f" -o "$tmp/t.zst"
	n=$($ms info --json "$tmp/t.zst" | sed -n 's/.*"events_total":\s*\([0-9]*\).*/\1/p')
	printf "| %s | %d | %.1f | %.2f |\n" "$(basename "$f" .pickle)" "$n" \
		"$(echo "$(stat -c%s "$f") / $n" | bc -l)" "$(echo "$(stat -c%s "$tmp/t.zst") / $n" | bc -l)"
done
