#!/usr/bin/env python3
"""Print the URLs a page opened from file:// asked for, from a Chromium net log.

Requests made for the page carry a network isolation key of file://; the browser's own
background traffic (updates, sign-in) does not. A net log cut short by the browser's exit is
closed here before parsing."""
import json
import sys

text = open(sys.argv[1], encoding="utf-8", errors="replace").read().rstrip()
try:
    log = json.loads(text)
except json.JSONDecodeError:
    try:  # cut short inside the events array
        log = json.loads(text.rstrip(",") + "]}")
    except json.JSONDecodeError as e:
        print(f"unreadable net log: {e}")
        sys.exit(2)
seen = set()
for ev in log.get("events", []):
    p = ev.get("params") or {}
    url, nik = p.get("url", ""), p.get("network_isolation_key", "")
    if url and nik.startswith("file://") and not url.startswith("file:") and url not in seen:
        seen.add(url)
        print(url)
