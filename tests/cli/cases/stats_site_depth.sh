# --site-depth: the top sites at the peak split a site by the library code it called (a
# transformers GPT-2 whose whole forward is one line of the script), never losing a byte: the
# sites' bytes sum to the same at every depth, and each deeper site begins with its site.
f=testdata/snapshots/explain/hf_gpt2.pickle.zst
for d in 1 2 3; do
	"$MEMSNAP" stats --json --top 100000 --site-depth $d "$f" 2>/dev/null >"$TMPDIR/sd$d.json"
done
python3 - "$TMPDIR" <<'PY'
import json, sys
sites = {d: json.load(open(f"{sys.argv[1]}/sd{d}.json"))["top_sites_at_peak"] for d in (1, 2, 3)}
for d in (1, 2, 3):
    print(f"depth {d}: {len(sites[d])} sites, {sum(s['bytes'] for s in sites[d])} bytes; "
          f"largest: {max(sites[d], key=lambda s: s['bytes'])['site']}")
base = {s["site"] for s in sites[1]}
print("every deeper site begins with a depth-1 site:",
      all(any(s["site"] == b or s["site"].startswith(b + " > ") for b in base)
          for d in (2, 3) for s in sites[d]))
PY
"$MEMSNAP" stats --site-depth 0 "$f" 2>&1 | head -1
