# explain takes replay's options, and means by them what replay does: --device picks a device of
# a two-device snapshot (the peak is that device's replay's), --device-memory with
# --memory-fraction sets the capacity (the OOM under a tenth of 80 GiB is there, exit 3, as
# replay says); and diff --site-depth names sites by the user's frame and the one it called.
s=testdata/snapshots/devices/two_devices.pickle.zst
for dev in 0 1; do
	e=$("$MEMSNAP" -q explain --json --device $dev "$s" | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["device"], d["peak"]["bytes"])')
	r=$("$MEMSNAP" -q replay --json --device $dev "$s" | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["device"], d["peak_reserved_bytes"])')
	echo "--device $dev: explain $e, replay $r, $([ "$e" = "$r" ] && echo same || echo DIFFERENT)"
done
o="--device-memory 80GiB --memory-fraction 0.1"
"$MEMSNAP" -q explain --json $o testdata/snapshots/dynamic_oom.pickle >"$TMPDIR/e.json"
echo "explain $o: exit $?"
"$MEMSNAP" -q replay --json $o testdata/snapshots/dynamic_oom.pickle >"$TMPDIR/r.json"
echo "replay $o: exit $?"
python3 - "$TMPDIR/e.json" "$TMPDIR/r.json" <<'PY'
import json, sys
e, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("capacity", e["oom"]["capacity_bytes"] == int(0.1 * 80 * 2**30), "OOM event the same:",
      e["oom"]["event"] == r["oom"]["index"], "ended by it:", e["replay_ended_by_oom"])
PY
rm -f "$TMPDIR/e.json" "$TMPDIR/r.json"
"$MEMSNAP" -q diff --json --site-depth 2 testdata/snapshots/explain/hf_gpt2.pickle.zst \
	testdata/snapshots/explain/llama.pickle.zst | python3 -c '
import json, sys; d = json.load(sys.stdin)
s = d["sites"]
print("diff --site-depth 2:", len(s), "sites,", sum(" > " in x["name"] for x in s), "of two frames")'
