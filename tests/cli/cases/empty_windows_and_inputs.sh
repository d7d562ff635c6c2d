# Nothing computed over nothing: a window of no event is a usage error (exit 2) in every command
# that takes one; a snapshot of nothing (torch.cuda.memory_snapshot() before any allocation: [])
# is an error for stats as for explain; JSON that would leave a failed file out is not printed;
# diff says which side is a recording cut short.
d=$(mktemp -d)
echo '[]' >"$d/nothing.json"
s=testdata/snapshots/dynamic_oom.pickle
"$MEMSNAP" render "$s" -o "$d/x.html" --to 0 2>"$d/err"
echo "render --to 0: exit $?, wrote $(ls "$d" | grep -c html)"
head -1 "$d/err"
"$MEMSNAP" info "$s" --from 3 --to 3 >/dev/null 2>&1
echo "info --from 3 --to 3: exit $?"
"$MEMSNAP" convert "$s" -o "$d/x.zst" --from 9 --to 2 >/dev/null 2>&1
echo "convert --from 9 --to 2: exit $?, wrote $(ls "$d" | grep -c zst)"
"$MEMSNAP" info "$d/nothing.json" | grep -E "^(torch|streams|used):"
"$MEMSNAP" stats "$d/nothing.json" 2>&1 | sed "s|$d/||"
echo "stats of []: exit ${PIPESTATUS[0]}"
"$MEMSNAP" -q explain --json "$s" "$d/nothing.json" >"$d/out" 2>/dev/null
echo "explain --json with one file failing: exit $?, $(wc -c <"$d/out") bytes on stdout"
head -c 12000 testdata/snapshots/explain/leak.zst >"$d/cut.zst"
"$MEMSNAP" -q diff testdata/snapshots/explain/leak.zst "$d/cut.zst" | head -2 | sed "s|$d/||"
"$MEMSNAP" -q diff --json testdata/snapshots/explain/leak.zst "$d/cut.zst" | python3 -c '
import json, sys; d = json.load(sys.stdin); print("a_cut_short", d["a_cut_short"], "b_cut_short", d["b_cut_short"])'
# stats over both: the cut one's peak is a lower bound, and said so
"$MEMSNAP" -q stats testdata/snapshots/explain/leak.zst "$d/cut.zst" | tail -2 | sed "s|$d/||"
"$MEMSNAP" -q stats --json "$d/cut.zst" | python3 -c '
import json, sys; d = json.load(sys.stdin); print("stats json: cut_short", d["cut_short"], "peak_is_lower_bound", d["peak_is_lower_bound"])'
rm -rf "$d"
