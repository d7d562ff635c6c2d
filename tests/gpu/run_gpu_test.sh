#!/bin/bash
# CTest entry for the GPU tests: skips (77) with a message where they cannot run.
# usage: run_gpu_test.sh record|replay|multi|pytest BUILD_DIR SNAPSHOT_DIR OUT_DIR
set -uo pipefail
what=$1 build=$2 snaps=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no NVIDIA GPU here"; exit 77
fi
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	echo "SKIP: PyTorch with CUDA is not installed"; exit 77
fi
case $what in
record)
	[ -f "$build/lib/memsnap/libmemsnap_torch.so" ] || {
		echo "SKIP: libmemsnap_torch.so not built (MEMSNAP_TORCH)"; exit 77; }
	exec "$here/record_gpu.sh" "$build" "$out/record" ;;
replay)
	[ -f "$build/lib/memsnap/libmemsnap_torch_replay.so" ] || {
		echo "SKIP: libmemsnap_torch_replay.so not built (MEMSNAP_TORCH)"; exit 77; }
	[ -d "$snaps" ] || { echo "SKIP: no real traces at $snaps"; exit 77; }
	exec "$here/replay_gpu.sh" "$build" "$snaps" "$out/replay" ;;
multi)
	[ -f "$build/lib/memsnap/libmemsnap_torch_replay.so" ] || {
		echo "SKIP: libmemsnap_torch_replay.so not built (MEMSNAP_TORCH)"; exit 77; }
	exec "$here/multi_gpu.sh" "$build" "$out/multi" ;;
pytest)
	[ -f "$build/lib/memsnap/libmemsnap_torch.so" ] || {
		echo "SKIP: libmemsnap_torch.so not built (MEMSNAP_TORCH)"; exit 77; }
	exec "$here/pytest_plugin.sh" "$build" "$out/pytest" ;;
esac
echo "usage: run_gpu_test.sh record|replay|multi|pytest BUILD_DIR SNAPSHOT_DIR OUT_DIR"; exit 2
