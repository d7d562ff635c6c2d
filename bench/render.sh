#!/usr/bin/env bash
# Render benchmark (see bench/README.md): for each real trace and for a 10 M-event trace,
# `memsnap render -o report.html` wall time and peak RSS (GNU time), the page's size, and the
# time until the page has drawn everything in headless Chromium (performance.now() at the end
# of its script, read back from the DOM; best of 3).
# Usage: bench/render.sh [BUILD_DIR] [SNAPSHOT_DIR]   (defaults: build, testdata/snapshots)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
src_snaps=${2:-testdata/snapshots}
ms=$build/cli/memsnap
bp=$build/bench/bench_parse
browser=$(command -v chromium || true)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. bench/snapshots.sh
snaps=$tmp/snaps
plain_snapshots "$src_snaps" "$snaps"

paint() {
	[ -n "$browser" ] || { echo "-"; return; }
	local best=999999 t
	for _ in 1 2 3; do
		t=$(timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
			--disable-background-networking --user-data-dir="$tmp/prof" --window-size=1400,2400 \
			--dump-dom "file://$1" 2>/dev/null | grep -o 'data-ready-ms="[0-9]*"' | grep -o '[0-9]*')
		[ -n "$t" ] && [ "$t" -lt "$best" ] && best=$t
	done
	echo "$best ms"
}

echo "# memsnap render benchmark"
echo
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(uname -sr)"
echo "browser: $([ -n "$browser" ] && "$browser" --version 2>/dev/null | head -1 || echo none)"
echo "date: $(date -u +%Y-%m-%d)"
echo
echo "| trace | events | render time | peak RSS | HTML size | drawn in Chromium |"
echo "|---|---|---|---|---|---|"
$bp long "$snaps/dynamic_seq.pickle" "$tmp/long.zst" 150 >/dev/null
for f in "$snaps"/*.pickle "$tmp/long.zst"; do
	/usr/bin/time -f "%e %M" -o "$tmp/time" "$ms" render "$f" -o "$tmp/r.html" 2>/dev/null
	read -r secs kb <"$tmp/time"
	events=$("$ms" info "$f" | sed -n 's/^events: *\([0-9]*\).*/\1/p')
	name=$(basename "$f")
	[ "$name" = long.zst ] && name="150 x dynamic_seq (.zst)"
	printf "| %s | %s | %.2f s | %.0f MB | %.2f MB | %s |\n" "$name" "$events" "$secs" \
		"$(echo "$kb / 1024" | bc -l)" "$(echo "$(stat -c %s "$tmp/r.html") / 1000000" | bc -l)" \
		"$(paint "$tmp/r.html")"
done
