# --frames all --json: "stack" holds every frame, "site_frame" the site's index in it
"$MEMSNAP" stats --frames all --json testdata/snapshots/edge/stacks_all.pickle | python3 -c '
import json, sys
d = json.load(sys.stdin)
for s in d["top_sites_at_peak"]:
    k = s.get("site_frame")
    print(s["site"], len(s["stack"]) if s["stack"] else None, k,
          s["stack"][k]["name"] if s["stack"] else None)'
