# Segments given back just before an allocation that fits without them: in a snapshot, an
# empty_cache() of the program or the allocator's retry under a limit the snapshot does not
# record (here the retry: truth has num_alloc_retries 1, and the job calls no empty_cache); the
# replay says which of its calls are told so. memsnap's recording marks every call: a retry.
d=testdata/snapshots/explain
for f in $d/frag_oom_expandable.pickle.zst $d/frag_oom_expandable.zst; do
	"$MEMSNAP" -q replay --json "$f" | python3 -c '
import json, sys; r = json.load(sys.stdin); c = r["counters"] if "counters" in r else r
print(sys.argv[1].split("/")[-1], "retries", r["memory_stats"]["num_alloc_retries"],
      "empty_cache calls", c["empty_cache_calls"], "of them told before an allocation",
      c["empty_cache_calls_before_alloc"])' "$f"
done
python3 -c 'import json, sys; print("PyTorch: retries", json.load(open(sys.argv[1]))["stats"]["num_alloc_retries"])' $d/frag_oom_expandable.truth.json
