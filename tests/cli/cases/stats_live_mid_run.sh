# A trace that starts mid-run: what is live at the end counts the blocks from before it too, as
# explain's "live at the end" does, and says how many of them there are
f=testdata/snapshots/real/ring_wrap.pickle.zst
"$MEMSNAP" stats "$f" 2>/dev/null | grep -E "^  live (at end|throughout)"
"$MEMSNAP" -q explain "$f" | grep "^  live at the end"
