# The OOM message's free bytes leave out what was held outside PyTorch at the recorded OOM: the
# recording (which knows the device's size and the memory outside) and the snapshot (whose
# device size comes from the OOM) both say what PyTorch said (truth)
d=testdata/snapshots/explain
said=$(python3 -c 'import json, re, sys
t = json.load(open(sys.argv[1]))
m = [v for k, v in t.items() if isinstance(v, str) and v.startswith("CUDA out of memory")][0]
print(re.search(r"of which (\S+ \S+) is free", m).group(1))' $d/frag_oom.truth.json)
echo "PyTorch: $said"
for f in $d/frag_oom.zst $d/frag_oom.pickle.zst; do
	ours=$("$MEMSNAP" replay "$f" 2>/dev/null | grep -o "of which [^ ]* [^ ]* is free" | cut -d' ' -f3,4)
	echo "$(basename "$f"): $ours $([ "$ours" = "$said" ] && echo same || echo DIFFERENT)"
done
