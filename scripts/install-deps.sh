#!/usr/bin/env bash
# Installs the Debian packages memsnap builds and tests with, if any is missing.
# Used by `make demo`, `make test` and .ci/run; safe to run again.
set -euo pipefail

pkgs=(build-essential cmake pkg-config libmsgpack-dev libzstd-dev zstd libcjson-dev
      libgraphviz-dev graphviz libjs-dygraphs libcriterion-dev zlib1g-dev python3)
# clang builds the libFuzzer targets and clang-format checks the layout, when present;
# with --test, Chromium opens the HTML report in the tests (skipped where it cannot be had)
optional=(clang clang-format)
[ "${1:-}" = --test ] && optional+=(chromium)
# with --test, Python's headers build the test module of the recorder's Python stack reader
[ "${1:-}" = --test ] && pkgs+=(python3-dev)
# with --test, the JSON schema of the results is checked against every command's output
[ "${1:-}" = --test ] && pkgs+=(python3-jsonschema)
# with --test, pytest runs the pytest plugin's own tests (tests/pytest/)
[ "${1:-}" = --test ] && pkgs+=(python3-pytest)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=() missing_optional=()
for p in "${pkgs[@]}"; do installed "$p" || missing+=("$p"); done
for p in "${optional[@]}"; do installed "$p" || missing_optional+=("$p"); done
[ ${#missing[@]} -eq 0 ] && [ ${#missing_optional[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null; then
		[ ${#missing[@]} -eq 0 ] && exit 0 # only optional ones: go on without them
		echo "memsnap: need root (or sudo) to install: ${missing[*]}" >&2
		exit 1
	fi
	sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
echo "memsnap: installing ${missing[*]} ${missing_optional[*]}" >&2
$sudo apt-get update -qq || [ ${#missing[@]} -eq 0 ]
if [ ${#missing[@]} -gt 0 ]; then
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for p in "${missing_optional[@]}"; do
	$sudo apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 ||
		echo "memsnap: optional $p not installed (its checks will be skipped)" >&2
done
