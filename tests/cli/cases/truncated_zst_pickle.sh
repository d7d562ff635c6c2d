# A zstd-compressed pickle cut off inside a frame (also before its first byte could be told) is
# said to be cut off, at its byte in the file
# (not at an offset of the decompressed pickle); the whole file reads as its plain pickle does.
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
f=testdata/snapshots/dynamic_seq.pickle.zst
head -c 20000 "$f" >"$t/cut.pickle.zst"
"$MEMSNAP" info "$t/cut.pickle.zst" 2>&1 | sed "s|$t|TMP|"
echo "exit ${PIPESTATUS[0]}"
# cut before the first block ends: no byte of the pickle to tell its kind by
head -c 4000 "$f" >"$t/cut.pickle.zst"
"$MEMSNAP" info "$t/cut.pickle.zst" 2>&1 | sed "s|$t|TMP|"
echo "exit ${PIPESTATUS[0]}"
zstd -qdc "$f" >"$t/plain.pickle"
"$MEMSNAP" -q convert "$f" -o "$t/a.zst"
"$MEMSNAP" -q convert "$t/plain.pickle" -o "$t/b.zst"
cmp "$t/a.zst" "$t/b.zst" && echo "the compressed and the plain pickle give the same trace"
