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
# the peak's annotation: the innermost one open at the peak's entry, by the entries' and the
# annotations' times as PyTorch wrote them (read by Python from the snapshot)
f=testdata/snapshots/explain/lightning.pickle.zst
"$MEMSNAP" -q explain --json "$f" | python3 -c '
import json, pickle, subprocess, sys
peak = json.load(sys.stdin)["peak"]
snap = pickle.loads(subprocess.run(["zstd", "-qdc", sys.argv[1]], check=True,
                                   capture_output=True).stdout)   # the project s own recording
t = snap["device_traces"][0][peak["event"]]["time_us"]
open_ = []
for a in sorted(snap["external_annotations"], key=lambda a: a["time_us"]):
    if a["time_us"] > t:
        break
    if a["stage"] == "START":
        open_.append(a["name"])
    elif a["name"] in open_:
        open_.reverse(); open_.remove(a["name"]); open_.reverse()
want = open_[-1] if open_ else None
print("peak annotation:", peak["annotation"], "| by the times:", "the same" if want == peak["annotation"] else want)' "$f"
# live at the end of the leak's snapshot, against what the job had (truth.json): the model's
# parameters and AdamW's state, and the kept logits, which are what grew
"$MEMSNAP" -q explain --json testdata/snapshots/explain/leak.pickle.zst | python3 -c '
import json, sys
e = json.load(sys.stdin)["live_at_end"]
t = json.load(open(sys.argv[1]))
c = e["categories"]
print("live at end: parameters", c["parameters"] == t["model"]["parameter_bytes"],
      "optimizer_state", c["optimizer_state"] == t["model"]["optimizer_state_bytes"],
      "growing sites", e["growing_sites_bytes_at_last_step"] == t["leak"]["bytes"],
      "and at the end", e["growing_sites_bytes"] == t["leak"]["bytes"],
      "| other minus growth:", (c["other"] - t["leak"]["bytes"]) >> 20, "MiB")' \
	testdata/snapshots/explain/leak.truth.json
# a file whose end-state segments do not fit its events (proto/small_p4: the first 300 entries
# of dynamic_oom with all of its segments): the blocks live before its first event are placed
# by the model, and what is live at the end is what the replay holds; the leak's own snapshot
# is consistent
for f in proto/small_p4.pickle explain/leak.pickle.zst; do
	"$MEMSNAP" -q explain --json "testdata/snapshots/$f" | python3 -c '
import json, sys; e = json.load(sys.stdin)
print(sys.argv[1], "exceeds at the peak:", e["categories_exceed_allocated"], "at the end:",
      e["live_at_end"]["exceeds_allocated"])' "$f"
done
# a trace whose blocks from before it do not fit under its own recorded limit is replayed from
# an empty allocator: what it frees without allocating exceeds what the replay had, flagged
"$MEMSNAP" -q explain --json --device 0 testdata/traces/v1.0/random.zst | python3 -c '
import json, sys; e = json.load(sys.stdin)
print("random.zst exceeds at the peak:", e["categories_exceed_allocated"])'
