# Frees recorded only by their completion: explain's live-at-the-end is what stats and the end
# state say (the one 2 MiB block), not every allocation
f=testdata/snapshots/edge/completions_only.json
"$MEMSNAP" -q explain "$f" | grep "live at the end"
"$MEMSNAP" stats "$f" 2>/dev/null | grep "live at end"
