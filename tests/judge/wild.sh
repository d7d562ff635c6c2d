#!/usr/bin/env bash
# The independent reader (snapshot_reader.py) over the third-party snapshots and PyTorch 2.11's
# recorded ones beside the project (../shared/testdata/wild, ../shared/testdata/torch-2.11):
# stats --json must agree with it on every device; and explain's compile contexts at the peak of
# Mosaic's test snapshot must be what Mosaic's tests expect (mosaic.py). Skipped (exit 77) where
# they are absent.
# usage: wild.sh MEMSNAP WILD_DIR TORCH_DIR
memsnap=$1 wild=$2 torch=$3
here=$(dirname "$0")
shopt -s nullglob
files=("$wild"/*.pickle "$wild"/*.pkl "$torch"/*.pickle)
if [ ${#files[@]} -eq 0 ]; then
	echo "judge_wild: skipped: no snapshots under $wild or $torch"
	exit 77
fi
rc=0
mosaic=$wild/facebookresearch_mosaic__test_snapshots_output.pickle
if [ -e "$mosaic" ]; then
	python3 "$here/mosaic.py" "$memsnap" "$mosaic" || rc=1
fi
python3 "$here/snapshot_reader.py" "$memsnap" "${files[@]}" || rc=1
exit $rc
