#!/bin/bash
# cmake --install the recorder into a scratch prefix, then build a program outside the project
# against it with pkg-config (shared and static) and with its CMake package (shared and
# static); every build must run and write a trace that memsnap reads with 1000 events. And
# libmemsnap: a program built as C and as C++ with its pkg-config file answers as the command.
# usage: run.sh BUILD_DIR MEMSNAP SOURCE_DIR
set -euo pipefail
build=$1 memsnap=$2 src=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/msr-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cc=${CC:-cc}

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in include/memsnap/recorder.h; do
	test -f "$prefix/$f" || { echo "FAIL: $f not installed"; exit 1; }
done
libdir=$(dirname "$(find "$prefix" -name 'libmemsnap_recorder.so' | head -1)")
test -f "$libdir/libmemsnap_recorder.a" || { echo "FAIL: static library not installed"; exit 1; }
test -f "$libdir/pkgconfig/memsnap-recorder.pc" || { echo "FAIL: no pkg-config file"; exit 1; }
# only msr_* leave the shared library
if nm -D --defined-only "$libdir/libmemsnap_recorder.so" | awk '$2 ~ /[TDB]/ {print $3}' |
	grep -v '^msr_' | grep -v '^MEMSNAP_RECORDER' | grep .; then
	echo "FAIL: symbols other than msr_* exported"; exit 1
fi

# the recorder carries none of the parser, replay or render
if nm "$libdir/libmemsnap_recorder.a" 2>/dev/null | grep -E ' T (ms_trace_read_buffer|ms_source_read|ms_replay|ms_model_|ms_render)'; then
	echo "FAIL: the recorder library contains reader, replay or render code"; exit 1
fi

check() { # name binary
	"$2" "$work/$1.zst" >/dev/null
	n=$("$memsnap" info --json "$work/$1.zst" | sed -n 's/.*"events_total":[[:space:]]*\([0-9]*\).*/\1/p')
	[ "$n" = 1000 ] || { echo "FAIL: $1: $n events, expected 1000"; exit 1; }
	echo "ok: $1"
}

export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046
"$cc" -o "$work/pc_shared" "$src/tests/install/consumer/example.c" \
	$(pkg-config --cflags --libs memsnap-recorder) -Wl,-rpath,"$libdir"
check pc_shared "$work/pc_shared"
# shellcheck disable=SC2046
"$cc" -o "$work/pc_static" "$src/tests/install/consumer/example.c" \
	$(pkg-config --static --cflags memsnap-recorder) "$libdir/libmemsnap_recorder.a" \
	$(pkg-config --static --libs-only-l memsnap-recorder | sed 's/-lmemsnap_recorder//')
if ldd "$work/pc_static" | grep -q memsnap_recorder; then
	echo "FAIL: the static build links the shared library"; exit 1
fi
check pc_static "$work/pc_static"

cmake -S "$src/tests/install/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_C_COMPILER="$cc" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
check cmake_shared "$work/cmake/example_shared"
check cmake_static "$work/cmake/example_static"

# libmemsnap from outside: C and C++, through pkg-config, the same JSON as the command
test -f "$libdir/pkgconfig/memsnap.pc" || { echo "FAIL: no memsnap.pc"; exit 1; }
snap=$src/testdata/snapshots/dynamic_oom.pickle
# shellcheck disable=SC2046
"$cc" -std=c11 -o "$work/ask_c" "$src/tests/install/consumer/ask.c" \
	$(pkg-config --cflags --libs memsnap) -Wl,-rpath,"$libdir"
if command -v "${CXX:-c++}" >/dev/null; then
	# shellcheck disable=SC2046
	"${CXX:-c++}" -x c++ -o "$work/ask_cxx" "$src/tests/install/consumer/ask.c" \
		$(pkg-config --cflags --libs memsnap) -Wl,-rpath,"$libdir"
fi
for prog in ask_c ask_cxx; do
	[ -x "$work/$prog" ] || { echo "skip: $prog (no C++ compiler)"; continue; }
	"$work/$prog" "$snap" stats >"$work/lib.json"
	"$memsnap" -q stats --json "$snap" >"$work/cmd.json"
	python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
		"$work/lib.json" "$work/cmd.json" || { echo "FAIL: $prog: stats differs from the command"; exit 1; }
	echo "ok: $prog"
done

# the Python package and its metadata: memsnap.open over the installed libmemsnap, and the
# pytest plugin found through the pytest11 entry point with the package's folder on the path
pydir=$libdir/memsnap/python
ver=$("$memsnap" version | sed -n 's/^memsnap \([0-9.]*\).*/\1/p')
test -f "$pydir/memsnap-$ver.dist-info/entry_points.txt" ||
	{ echo "FAIL: no memsnap-$ver.dist-info beside the Python package"; exit 1; }
PYTHONPATH=$pydir python3 -c 'import memsnap,sys; sys.exit(memsnap.open(sys.argv[1]).info()["trace"] != sys.argv[1])' "$snap" ||
	{ echo "FAIL: memsnap.open from the installed package"; exit 1; }
python3 -c 'import importlib.metadata' 2>/dev/null && PYTHONPATH=$pydir python3 -c '
import importlib.metadata as m, sys
eps = m.entry_points()
eps = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
sys.exit(not any(e.value == "memsnap.pytest_plugin" for e in eps))' ||
	{ echo "FAIL: the pytest11 entry point is not found"; exit 1; }
echo "ok: python package and pytest entry point"
