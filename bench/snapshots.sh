# Sourced by the benchmark scripts: plain_snapshots DIR OUT copies each real snapshot in DIR
# (NAME.pickle, NAME.pickle.zst or NAME.pickle.gz, the way testdata/snapshots keeps them) to
# OUT/NAME.pickle, decompressed, so that every benchmark reads the same plain pickles that
# torch.cuda.memory._dump_snapshot writes. Only files with a NAME.truth.json beside them are
# taken: those are the recordings, not the hand-made cases.
plain_snapshots() {
	local dir=$1 out=$2 f name n=0
	mkdir -p "$out"
	for f in "$dir"/*.pickle "$dir"/*.pickle.zst "$dir"/*.pickle.gz; do
		[ -e "$f" ] || continue
		name=$(basename "$f")
		name=${name%.zst}
		name=${name%.gz}
		name=${name%.pickle}
		[ -e "$dir/$name.truth.json" ] || continue
		case $f in
		*.zst) zstd -qdc "$f" >"$out/$name.pickle" ;;
		*.gz) gzip -dc "$f" >"$out/$name.pickle" ;;
		*) cp "$f" "$out/$name.pickle" ;;
		esac
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || { echo "no snapshots with truth files in $dir" >&2; return 1; }
}
