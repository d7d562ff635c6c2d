#!/usr/bin/env bash
# Time until each page has drawn, in headless Chromium (best of 3): memsnap's report against
# PyTorch's trace_plot page for the same snapshot, opened offline with a local copy of its
# viewer. PyTorch's page imports torch/utils/viz/MemoryViz.js from a CDN, which imports d3 v5
# from another; VIEWER_DIR must hold a copy of MemoryViz.js whose d3 imports read window.d3
# instead, and d3.min.js (Debian's node-d3 5.16: /usr/share/nodejs/d3/dist/d3.min.js). Neither
# is part of memsnap. "Drawn": memsnap's page sets data-ready-ms at the end of its script; for
# PyTorch's a module script placed after the viewer's records performance.now() (module
# scripts run in order, and the viewer draws synchronously).
# Usage: bench/first_paint.sh MEMSNAP SNAPDIR TORCH_PAGES_DIR VIEWER_DIR
#   TORCH_PAGES_DIR: NAME.torch.html written by bench/torch_trace_plot.py
set -euo pipefail
ms=$1 snaps=$2 pages=$3 viewer=$4
browser=$(command -v chromium)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$viewer/MemoryViz.js" "$viewer/d3.min.js" "$tmp/"

drawn() { # FILE -> best of 3, ms
	local best=999999 t
	for _ in 1 2 3; do
		t=$(timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
			--allow-file-access-from-files --disable-background-networking \
			--user-data-dir="$tmp/prof" --window-size=1400,1000 --dump-dom "file://$1" \
			2>/dev/null | grep -o 'data-ready-ms="[0-9]*"' | grep -o '[0-9]*' || true)
		[ -n "$t" ] && [ "$t" -lt "$best" ] && best=$t
	done
	echo "$best"
}

echo "browser: $("$browser" --version 2>/dev/null | head -1); machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
echo
echo "| snapshot | memsnap page drawn | PyTorch page drawn | ratio |"
echo "|---|---|---|---|"
for page in "$pages"/*.torch.html; do
	name=$(basename "$page" .torch.html)
	sed -e 's|<script type="module">|<script src="d3.min.js"></script><script type="module">|' \
		-e 's|https://cdn.jsdelivr.net/gh/pytorch/pytorch@main/torch/utils/viz/MemoryViz.js|./MemoryViz.js|' \
		-e 's|</body>|<script type="module">document.body.dataset.readyMs = String(Math.round(performance.now()));</script></body>|' \
		"$page" >"$tmp/$name.torch.html"
	"$ms" render "$snaps/$name.pickle" -o "$tmp/$name.memsnap.html" 2>/dev/null
	a=$(drawn "$tmp/$name.memsnap.html")
	b=$(drawn "$tmp/$name.torch.html")
	printf "| %s | %s ms | %s ms | %.1fx |\n" "$name" "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
