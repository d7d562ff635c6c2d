# The user's own categories (--category NAME=REGEX, --categories FILE): an allocation belongs to
# the first whose extended regular expression matches one of its frames, "file:line function";
# it wins over memsnap's rules. Checked against Python's own walk over the pickle: the bytes
# asked for by the allocations alive after the peak's event whose frames match (Python's re).
d=testdata/snapshots/inference
f=$d/gpt2_dynamic.pickle.zst
zstd -qdc "$f" >"$TMPDIR/s.pickle"
printf '# mine\n\ncache=cache_utils\nsampling=generation/utils\\.py:[0-9]+ _sample\n' >"$TMPDIR/cats"
"$MEMSNAP" -q explain --json --category 'attn=sdpa_attention' --categories "$TMPDIR/cats" "$f" \
	>"$TMPDIR/x.json"
"$MEMSNAP" -q stats --json --category 'attn=sdpa_attention' --categories "$TMPDIR/cats" "$f" \
	>"$TMPDIR/s.json"
python3 - "$TMPDIR/s.pickle" "$TMPDIR/x.json" "$TMPDIR/s.json" <<'PY'
import json, pickle, re, sys
tr = pickle.load(open(sys.argv[1], "rb"))["device_traces"][0]
x = json.load(open(sys.argv[2]))
st = json.load(open(sys.argv[3]))
cats = [("attn", "sdpa_attention"), ("cache", "cache_utils"),
        ("sampling", r"generation/utils\.py:[0-9]+ _sample")]

def cat(frames):
    for name, pat in cats:
        for fr in frames:
            if re.search(pat, f"{fr['filename']}:{fr['line']} {fr['name']}"):
                return name
    return None

def at(p, freed):
    live = {}
    for e in tr[:p + 1]:
        if e["action"] == "alloc":
            live[e["addr"]] = e
        elif e["action"] == freed:
            live.pop(e["addr"], None)
    want = {n: 0 for n, _ in cats}
    for e in live.values():
        c = cat(e.get("frames") or [])
        if c:
            want[c] += e["size"]
    return want

want = at(x["peak"]["event"], "free_requested")
got = {u["name"]: u["bytes"] for u in x["user_categories"]}
print("explain at event", x["peak"]["event"], got, "ok" if got == want else f"DIFFERS: {want}")
print("kv_cache at the peak", x["categories"]["kv_cache"], "(cache_utils claims it)")
# stats counts requested bytes to free_completed, as PyTorch's requested_bytes
want = at(st["peak_requested_index"], "free_completed")
got = {u["name"]: u["bytes"] for u in st["user_categories_at_peak"] if u["name"]}
print("stats at event", st["peak_requested_index"], got, "ok" if got == want else f"DIFFERS: {want}")
PY
"$MEMSNAP" -q explain --category 'cache=cache_utils' "$f" | sed -n 3,4p
"$MEMSNAP" -q diff --category 'cache=cache_utils' "$d/llama_dynamic.pickle.zst" \
	"$d/llama_static.pickle.zst" | sed -n '/what each peak/,/^$/p' | sed -n 1,3p
# bad categories: one line, exit 2 (a file that cannot be read: exit 1)
for a in 'x' '=y' 'a b=c' 'n=(' 'n=' 'parameters=adam' 'kv_cache=x'; do
	"$MEMSNAP" explain --category "$a" "$f" >/dev/null 2>"$TMPDIR/e"
	echo "--category '$a': exit $?: $(head -1 "$TMPDIR/e")"
done
"$MEMSNAP" stats --category 'a=x' --category 'a=y' "$f" >/dev/null 2>"$TMPDIR/e"
echo "twice: exit $?: $(head -1 "$TMPDIR/e")"
printf 'ok=x\nbad line\n' >"$TMPDIR/bad"
"$MEMSNAP" explain --categories "$TMPDIR/bad" "$f" >/dev/null 2>"$TMPDIR/e"
echo "file: exit $?: $(head -1 "$TMPDIR/e" | sed "s|$TMPDIR|TMP|")"
"$MEMSNAP" render --categories "$TMPDIR/none" "$f" >/dev/null 2>"$TMPDIR/e"
echo "missing file: exit $?: $(head -1 "$TMPDIR/e" | sed "s|$TMPDIR|TMP|")"
