# A page of a file with several devices: each device has its own breakdown (what the peak is
# made of) and its own verdict, the device that ran out of memory opens with it; the one that did
# not says so.
"$MEMSNAP" -q render testdata/snapshots/devices/two_devices.pickle.zst -o "$TMPDIR/two.html"
python3 - "$TMPDIR/two.html" <<'PY'
import html, json, re, sys
page = open(sys.argv[1]).read()
for m in re.finditer(r'<script id="memsnap-data[^"]*"[^>]*data-device="(\d+)"[^>]*>(.*?)</script>', page, re.S):
    d = json.loads(m.group(2).replace("<\\/", "</"))
    g, v = d["diagnosis"], d["verdict"]
    print("device", m.group(1), "| breakdown:", "categories of %d bytes" % sum(c[1] for c in g["categories"]) if g else None,
          "| verdict:", v["headline"][:60] if v else None, "| cause:", v["oom"]["cause"] if v and v["oom"] else None)
PY
# A page of one device that ran to its end opens with the verdict too, and one of another
# allocator's snapshot says so in it.
for f in testdata/snapshots/gpt_train.pickle.zst testdata/snapshots/versions/npu_expandable.pickle; do
	"$MEMSNAP" -q render "$f" -o "$TMPDIR/one.html"
	python3 - "$TMPDIR/one.html" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
m = re.search(r'<script id="memsnap-data[^"]*"[^>]*>(.*?)</script>', page, re.S)
v = json.loads(m.group(1).replace("<\\/", "</"))["verdict"]
print("one device | verdict:", v["headline"] if v else None)
PY
done
# A window's page opens with the whole run's verdict too.
"$MEMSNAP" -q render --from 100 --to 5000 testdata/snapshots/dynamic_oom.pickle -o "$TMPDIR/win.html"
python3 - "$TMPDIR/win.html" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
m = re.search(r'<script id="memsnap-data[^"]*"[^>]*>(.*?)</script>', page, re.S)
v = json.loads(m.group(1).replace("<\\/", "</"))["verdict"]
print("window 100 to 5000 | verdict:", v["headline"][:40] if v else None)
PY
# ... the same words as explain's, the settings judged included, for a window without the OOM
"$MEMSNAP" -q render testdata/snapshots/verdicts/frag.pickle.zst --from 100 --to 2000 -o "$TMPDIR/w2.html"
"$MEMSNAP" -q explain --json testdata/snapshots/verdicts/frag.pickle.zst >"$TMPDIR/x.json"
python3 - "$TMPDIR/w2.html" "$TMPDIR/x.json" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
m = re.search(r'<script id="memsnap-data[^"]*"[^>]*>(.*?)</script>', page, re.S)
v = json.loads(m.group(1).replace("<\\/", "</"))["verdict"]
x = json.load(open(sys.argv[2]))["verdict"]
print("window 100 to 2000 of frag | verdict as explain's:", v["headline"] == x)
PY
# A snapshot without a trace: its end-state page opens with explain's end-state verdict
"$MEMSNAP" -q render testdata/snapshots/verdicts/no_history.pickle.zst -o "$TMPDIR/nh.html"
"$MEMSNAP" -q explain --json testdata/snapshots/verdicts/no_history.pickle.zst >"$TMPDIR/nh.json"
python3 - "$TMPDIR/nh.html" "$TMPDIR/nh.json" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
m = re.search(r'<script id="memsnap-data[^"]*"[^>]*>(.*?)</script>', page, re.S)
v = json.loads(m.group(1).replace("<\\/", "</"))["verdict"]
print("no trace | verdict as explain's:", v is not None and v["headline"] == json.load(open(sys.argv[2]))["verdict"])
PY
