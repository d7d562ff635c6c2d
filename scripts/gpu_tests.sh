#!/bin/bash
# On a GPU machine without a package registry: build memsnap from carried Debian packages
# (scripts/gpu_host_build.sh, incremental where BUILD_DIR is there) and run GPU tests into OUT:
#   pytest   the pytest plugin's GPU suite (tests/gpu/pytest_plugin.sh); Debian's pytest is
#            unpacked from DEBS/pytest/ where the machine's Python has none
#   record, replay, multi   the GPU tests of ctest -L gpu (tests/gpu/run_gpu_test.sh)
# The real snapshots of the replay test are SNAPS ($SNAPS, default ../shared/testdata).
# usage: scripts/gpu_tests.sh DEBS BUILD_DIR OUT TEST...
set -u
debs=$1 build=$2 out=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
start=$(date +%s)
bash "$here/scripts/gpu_host_build.sh" "$debs" "$build" >"$out/build.txt" 2>&1 ||
	{ tail -30 "$out/build.txt"; exit 1; }
build=$(cd "$build" && pwd)
echo "built in $(($(date +%s) - start)) s"
export LD_LIBRARY_PATH=$build/deps-root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
py=${PYTHON:-python3}
"$py" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
nvidia-smi -L
rc=0
for t in "$@"; do
	t0=$(date +%s)
	case $t in
	pytest)
		if ! "$py" -c 'import pytest' 2>/dev/null; then
			mkdir -p "$build/pytest-root"
			for f in "$debs"/pytest/*.deb; do dpkg -x "$f" "$build/pytest-root"; done
			export PYTEST_PATH=$build/pytest-root/usr/lib/python3/dist-packages
		fi
		bash "$here/tests/gpu/pytest_plugin.sh" "$build" "$out/pytest" >"$out/pytest.txt" 2>&1 ;;
	record | replay | multi)
		bash "$here/tests/gpu/run_gpu_test.sh" "$t" "$build" "${SNAPS:-$here/../shared/testdata}" \
			"$out/$t" >"$out/$t.txt" 2>&1 ;;
	*) echo "unknown test $t"; continue ;;
	esac
	r=$?
	[ $r -ne 0 ] && rc=1
	echo "== $t: exit $r in $(($(date +%s) - t0)) s; $(grep -c '^PASS' "$out/$t.txt") PASS, $(grep -c '^FAIL:' "$out/$t.txt") FAIL"
	grep '^FAIL:' "$out/$t.txt" | head -10
done
exit $rc
