# explain --json: growth is null where it was not looked for (fewer than 3 steps), [] where
# nothing grew, a list where something did (leak: the logits kept each step); each site's label
# is the site as the text names it, at --site-depth 2 the user's frame down to the library's,
# and its "site" the last of those frames' file:line.
for f in explain/leak.zst explain/adamw.zst versions/v2_1_no_time.pickle; do
	"$MEMSNAP" -q explain --json "testdata/snapshots/$f" | python3 -c '
import json, sys; d = json.load(sys.stdin); g = d["growth"]
print(sys.argv[1], "growth_steps", d["growth_steps"], "growth", "null" if g is None else len(g))' "$f"
done
"$MEMSNAP" -q explain --json --site-depth 2 testdata/snapshots/explain/hf_gpt2.pickle.zst >"$TMPDIR/sites.json"
"$MEMSNAP" -q explain --site-depth 2 testdata/snapshots/explain/hf_gpt2.pickle.zst >"$TMPDIR/sites.txt"
python3 - "$TMPDIR/sites.json" "$TMPDIR/sites.txt" <<'PY'
import json, sys
top = json.load(open(sys.argv[1]))["findings"]["largest_activations"][0]
text = open(sys.argv[2]).read()
last = top["label"].rsplit(" > ", 1)[-1]
print("label has two frames:", " > " in top["label"], "| the text names it:", top["label"] in text,
      "| site is its last frame's line:", last.endswith(top["site"].rsplit("/", 1)[-1] + ")"))
PY
rm -f "$TMPDIR/sites.json" "$TMPDIR/sites.txt"
