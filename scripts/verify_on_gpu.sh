#!/bin/bash
# On a GPU machine: build memsnap from carried Debian packages (scripts/gpu_host_build.sh) and run
# `memsnap verify` with the two GPU backends (the model over real cudaMalloc; PyTorch's own
# allocator through the plugin) on each trace given. One line per trace and backend in
# OUT/verify_gpu.txt.
# The build is brought up to date first (incremental where BUILD_DIR is there).
# usage: scripts/verify_on_gpu.sh DEBS BUILD_DIR OUT TRACE...
set -u
debs=$1 build=$2 out=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
bash "$here/scripts/gpu_host_build.sh" "$debs" "$build" >"$out/build.txt" 2>&1 ||
	{ tail -30 "$out/build.txt"; exit 1; }
build=$(cd "$build" && pwd)
export LD_LIBRARY_PATH=$build/deps-root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for f in "$@"; do
	for b in cuda torch; do
		printf '%s %s: ' "$(basename "$f")" "$b"
		timeout 120 "$build/cli/memsnap" verify --backend "$b" "$f" 2>&1 |
			grep -vE '^memsnap: (warning|note)' | head -4 | tr '\n' ' '
		echo
	done
done | tee "$out/verify_gpu.txt"
