# SVG laid out in-process: valid XML from Graphviz, one node per segment plus legend and request
"$MEMSNAP" render testdata/snapshots/dynamic_oom.pickle -o "$TMPDIR/r.svg" 2>/dev/null || exit
head -c 5 "$TMPDIR/r.svg"; echo
grep -c 'class="node"' "$TMPDIR/r.svg"
grep -o 'failed request: [^&]*' "$TMPDIR/r.svg" | head -1
