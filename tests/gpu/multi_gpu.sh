#!/bin/bash
# GPU check of the GPU backends on the two-GPU recordings (testdata/snapshots/multi_gpu): every
# file replayed through PyTorch's own caching allocator (torch) and through the model over real
# cudaMalloc (cuda) ends within a minute, with the model's peaks, on the device each process used; and a rank's trace whose last 17 frees are still
# pending (testdata/snapshots/edge/pending_frees_at_end.pickle.zst) ends in seconds too: the
# close path completes every deferred free without waiting on one stream behind another's. A
# trace that starts mid-run is refused by the torch backend (only sim rebuilds its start).
# usage: tests/gpu/multi_gpu.sh BUILD_DIR OUT_DIR
set -uo pipefail
build=$(cd "$1" && pwd) out=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
ms=$build/cli/memsnap
py=${PYTHON:-python3}
mkdir -p "$out"
fails=0
for f in "$here"/testdata/snapshots/multi_gpu/*.zst \
	"$here/testdata/snapshots/edge/pending_frees_at_end.pickle.zst"; do
	t0=$(date +%s%N)
	timeout 60 "$ms" -q replay --json --backend torch "$f" >"$out/t.json" 2>"$out/t.err"
	rc=$?
	t1=$(date +%s%N)
	"$ms" -q replay --json "$f" >"$out/s.json" 2>/dev/null
	timeout 60 "$ms" -q replay --json --backend cuda "$f" >"$out/c.json" 2>"$out/c.err"
	crc=$?
	"$py" - "$out/c.json" "$out/s.json" "${f##*/}" "$crc" "$out/c.err" <<'PY' || fails=$((fails + 1))
import json, sys
name, rc, err = sys.argv[3], int(sys.argv[4]), open(sys.argv[5]).read()
if rc == 1 and "starts mid-run" in err:
    print("ok %s: cuda backend refused: the trace starts mid-run (sim only)" % name)
    sys.exit(0)
if rc not in (0, 3):
    print("FAIL %s: cuda backend exit %d: %s" % (name, rc, err.strip()[:300]))
    sys.exit(1)
c, s = (json.load(open(p)) for p in sys.argv[1:3])
per = lambda r: {str(r["device"]): r} if "device" in r else dict(r["devices"])
c, s = per(c), per(s)
bad = [d for d in s if d not in c or c[d]["peak_reserved_bytes"] != s[d]["peak_reserved_bytes"]]
print("%s %s: cuda backend, devices %s, reserved peaks %s" % (
      "FAIL" if bad else "ok", name, ",".join(sorted(c)), "as the model's" if not bad else "differ on %s" % bad))
sys.exit(1 if bad else 0)
PY
	"$py" - "$out/t.json" "$out/s.json" "${f##*/}" "$rc" "$(( (t1 - t0) / 1000000 ))" "$out/t.err" <<'PY' || fails=$((fails + 1))
import json, sys
name, rc, ms = sys.argv[3], int(sys.argv[4]), sys.argv[5]
err = open(sys.argv[6]).read()
if rc == 1 and "starts mid-run" in err:
    print("ok %s: refused in %s ms: the trace starts mid-run (sim only)" % (name, ms))
    sys.exit(0)
if rc not in (0, 3):
    print("FAIL %s: exit %d after %s ms%s" % (name, rc, ms, " (timed out: a hang)" if rc == 124 else ""))
    sys.exit(1)
t, s = (json.load(open(p)) for p in sys.argv[1:3])
per = lambda r: {str(r["device"]): r} if "device" in r else dict(r["devices"])
t, s = per(t), per(s)
bad = [d for d in s if d not in t or t[d]["peak_reserved_bytes"] != s[d]["peak_reserved_bytes"]]
print("%s %s: torch backend in %s ms, devices %s, reserved peaks %s" % (
      "FAIL" if bad else "ok", name, ms, ",".join(sorted(t)), "as the model's" if not bad else "differ on %s" % bad))
sys.exit(1 if bad else 0)
PY
done
exit $((fails > 0))
