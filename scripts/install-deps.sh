#!/usr/bin/env bash
# Installs the Debian packages memsnap builds and tests with, if any is missing.
# Used by `make demo`, `make test` and .ci/run; safe to run again.
set -euo pipefail

pkgs=(build-essential cmake pkg-config libmsgpack-dev libzstd-dev zstd libcjson-dev
      libgraphviz-dev graphviz libjs-dygraphs libcriterion-dev zlib1g-dev python3)
# clang builds the libFuzzer targets and clang-format checks the layout, when present
optional=(clang clang-format)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "memsnap: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "memsnap: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
	sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for p in "${optional[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		$sudo apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || true
done
