#!/bin/sh
# The pytest plugin's tests (test_plugin.py) with an interpreter that has pytest (Debian's
# python3-pytest): exit 77 (skipped) where none has. $1: the build tree's lib/memsnap/python,
# $2: the memsnap command.
for py in python3 /usr/bin/python3; do
	if "$py" -c 'import pytest' 2>/dev/null; then
		cd "$(dirname "$0")" || exit 1
		PYTHONPATH="$1" MEMSNAP="$2" exec "$py" -m pytest -q -p no:cacheprovider test_plugin.py
	fi
done
echo "pytest not found (Debian: python3-pytest): the plugin's tests are skipped"
exit 77
