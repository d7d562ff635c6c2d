#!/bin/bash
# Builds memsnap on a GPU machine that has PyTorch, CMake and a C/C++ compiler but neither the
# development files of msgpack-c, cJSON, zstd and zlib nor a package registry. DEBS holds their
# Debian packages, fetched beforehand where there is one:
#   apt-get download libmsgpack-dev libmsgpackc2 libcjson-dev libcjson1 libzstd-dev libzstd1 zlib1g-dev \
#     libjs-dygraphs
# They are unpacked into BUILD_DIR/deps-root (never into /), and CMake and pkg-config are pointed
# there (msgpack-c through pkg-config: its CMake package names absolute paths). The build is
# Release, with the PyTorch hook and replay plugin, without tests.
# Afterwards, for the programs: export LD_LIBRARY_PATH=BUILD_DIR/deps-root/usr/lib/x86_64-linux-gnu
# usage: scripts/gpu_host_build.sh DEBS BUILD_DIR
set -euo pipefail
debs=$(cd "$1" && pwd) build=$2
mkdir -p "$build"
build=$(cd "$build" && pwd)
root=$build/deps-root
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root"
for f in "$debs"/*.deb; do dpkg -x "$f" "$root"; done
lib=$root/usr/lib/x86_64-linux-gnu
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$root/usr" \
	-DZLIB_ROOT="$root/usr" -DCMAKE_DISABLE_FIND_PACKAGE_msgpack=ON \
	-DMEMSNAP_BUILD_TESTS=OFF -DMEMSNAP_TORCH=ON -DMEMSNAP_GRAPHVIZ=AUTO \
	-DMS_DYGRAPHS_JS="$root/usr/share/javascript/dygraphs/dygraph.min.js" \
	-DMS_DYGRAPHS_CSS="$root/usr/share/javascript/dygraphs/dygraph.min.css" \
	>"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
grep -A15 "feature summary" "$build/configure.log" | sed 's/^-- //'
cmake --build "$build" -j "$(nproc)" >"$build/build.log" 2>&1 || { tail -40 "$build/build.log"; exit 1; }
echo "built: $build/cli/memsnap"
