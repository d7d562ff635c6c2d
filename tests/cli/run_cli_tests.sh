#!/usr/bin/env bash
# CLI golden tests (zstd's cli-tests pattern): each cases/NAME.sh runs memsnap; its stdout,
# stderr and exit code are compared with NAME.stdout.exact, NAME.stderr.exact and NAME.exit
# (a missing expectation file is not checked). CTest runs each case as a test of its own
# (cli.COMMAND.NAME); this script runs the cases named, or all of them.
#
# Usage: run_cli_tests.sh MEMSNAP_BINARY PROJECT_ROOT [CASE...]
#   MEMSNAP_UPDATE_GOLDEN=1 rewrites the expected files of the cases named (never of all at once:
#   a change to one output is reviewed case by case, with git diff).
set -u
export MEMSNAP="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$2"
shift 2
cases="$root/tests/cli/cases"
if [ "${MEMSNAP_UPDATE_GOLDEN:-}" = 1 ] && [ $# = 0 ]; then
	echo "MEMSNAP_UPDATE_GOLDEN=1 rewrites the cases named, not all: name them after the root" >&2
	exit 2
fi
names=("$@")
if [ $# = 0 ]; then
	for c in "$cases"/*.sh; do names+=("$(basename "$c" .sh)"); done
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR="$tmp"
cd "$root" || exit 1
pass=0
fail=0
for name in "${names[@]}"; do
	c="$cases/$name.sh"
	if [ ! -f "$c" ]; then
		echo "FAIL $name (no case $c)"
		fail=$((fail + 1))
		continue
	fi
	bash "$c" >"$tmp/out" 2>"$tmp/err"
	echo $? >"$tmp/exit"
	if [ "${MEMSNAP_UPDATE_GOLDEN:-}" = 1 ]; then
		cp "$tmp/out" "$cases/$name.stdout.exact"
		cp "$tmp/err" "$cases/$name.stderr.exact"
		cp "$tmp/exit" "$cases/$name.exit"
	fi
	ok=1
	for k in stdout:out stderr:err; do
		exp="$cases/$name.${k%%:*}.exact"
		if [ -f "$exp" ] && ! diff -u "$exp" "$tmp/${k#*:}" >"$tmp/diff"; then
			echo "FAIL $name (${k%%:*})"
			head -40 "$tmp/diff"
			ok=0
		fi
	done
	if [ -f "$cases/$name.exit" ] && ! diff -q "$cases/$name.exit" "$tmp/exit" >/dev/null; then
		echo "FAIL $name (exit $(cat "$tmp/exit"), want $(cat "$cases/$name.exit"))"
		ok=0
	fi
	if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "cli: $pass passed, $fail failed"
[ $fail = 0 ]
