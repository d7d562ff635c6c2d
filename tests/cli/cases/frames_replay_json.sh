# --frames 2 --json: each holder's "stack", the site first, then its caller
"$MEMSNAP" replay --frames 2 --json testdata/snapshots/edge/stacks_all.pickle | python3 -c '
import json, sys
for h in json.load(sys.stdin)["oom"]["largest_live_allocations"]:
    print(h["size"], h["site"], [(f["name"], f["filename"], f["line"]) for f in h["stack"]])'
