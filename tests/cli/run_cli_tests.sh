#!/usr/bin/env bash
# CLI golden tests (zstd's cli-tests pattern): each cases/NAME.sh runs memsnap; its stdout,
# stderr and exit code are compared with NAME.stdout.exact, NAME.stderr.exact and NAME.exit
# (a missing expectation file is not checked). MEMSNAP_UPDATE_GOLDEN=1 rewrites them.
# Usage: run_cli_tests.sh MEMSNAP_BINARY PROJECT_ROOT
set -u
export MEMSNAP="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$2"
cases="$root/tests/cli/cases"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR="$tmp"
cd "$root" || exit 1
pass=0
fail=0
for c in "$cases"/*.sh; do
	name=$(basename "$c" .sh)
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
