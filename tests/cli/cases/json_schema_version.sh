# Every command's --json (docs/COMMANDS.md, "JSON"): every result object opens with
# schema_version 1 and names its input trace, on a one-device file and a two-device one, the
# device-keyed wrapper and stats' rows included; explain over two files, and diff, too.
M=testdata/snapshots/multi_gpu
for f in testdata/snapshots/dynamic_oom.pickle $M/pipeline.zst; do
	for cmd in info stats replay verify whatif explain check; do
		"$MEMSNAP" -q $cmd --json "$f" >"$TMPDIR/o.json" 2>/dev/null
		python3 - "$TMPDIR/o.json" "$cmd" "${f##*/}" <<'PY'
import json, sys
j, cmd, name = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
def results(j):
    if isinstance(j, list):
        return j
    out = [j]
    if "devices" in j and isinstance(j["devices"], dict):
        out += list(j["devices"].values())
    return out
bad = [r for r in results(j) if list(r)[:1] != ["schema_version"] or r["schema_version"] != 1
       or "trace" not in r]
print("%-8s %-18s %d result%s, %s" % (cmd, name, len(results(j)), "" if len(results(j)) == 1 else "s",
      "each opens with schema_version 1 and names its trace" if not bad else "NOT: %s" % list(bad[0])[:3]))
PY
	done
done
"$MEMSNAP" -q explain --json $M/ddp_rank0.pickle.zst $M/ddp_rank1.pickle.zst | python3 -c '
import json, sys
j = json.load(sys.stdin)
ok = list(j)[0] == "schema_version" and all(list(f)[0] == "schema_version" for f in j["files"])
print("explain over two files:", "every object opens with schema_version" if ok else "NOT")'
"$MEMSNAP" -q diff --json $M/ddp_rank0.pickle.zst $M/ddp_rank1.pickle.zst | python3 -c '
import json, sys
j = json.load(sys.stdin)
print("diff:", "opens with schema_version" if list(j)[0] == "schema_version" else "NOT")'
