# info names the private pools (CUDA graphs, MemPools): from the end-state segments of a snapshot
# (counted here by Python from the pickle) and from the events of a recording, which carry their
# pool. A snapshot read from a pipe: its size is not known, and info says so. whatif --configs
# given a directory or a missing file: one line each, exit 1.
d=testdata/snapshots/pools
"$MEMSNAP" info "$d/graph_pools.pickle.zst" | grep '^pools:'
zstd -qdc "$d/graph_pools.pickle.zst" | python3 -c '
import pickle, sys
snap = pickle.load(sys.stdin.buffer)  # a snapshot of this repository, recorded by its own script
p = [s for s in snap["segments"] if tuple(s["segment_pool_id"]) != (0, 0)]
print("Python: %d private, %d segments, %d bytes" % (len({tuple(s["segment_pool_id"]) for s in p}),
      len(p), sum(s["total_size"] for s in p)))'
"$MEMSNAP" info --json "$d/graph_pools.pickle.zst" | python3 -c '
import json, sys; i = json.load(sys.stdin)
print("json:", i["private_pools"], i["private_pool_segments"], i["private_pool_reserved_bytes"])'
"$MEMSNAP" info "$d/graph_pools.zst" | grep '^pools:'
mkfifo "$TMPDIR/pipe"
cat testdata/snapshots/dynamic_oom.pickle >"$TMPDIR/pipe" &
"$MEMSNAP" info "$TMPDIR/pipe" | head -1 | sed "s|$TMPDIR/||"
wait
"$MEMSNAP" whatif --configs "$TMPDIR" testdata/snapshots/dynamic_oom.pickle 2>&1 | sed "s|$TMPDIR|DIR|"
echo "exit ${PIPESTATUS[0]}"
"$MEMSNAP" whatif --configs "$TMPDIR/none" testdata/snapshots/dynamic_oom.pickle 2>&1 | sed "s|$TMPDIR|DIR|"
echo "exit ${PIPESTATUS[0]}"
# a memsnap trace is mapped, not streamed: from a pipe, one line (exit 1), never a wait
cat testdata/snapshots/pools/mempool.zst | "$MEMSNAP" info - 2>&1
echo "exit ${PIPESTATUS[1]}"
# a --configs file of blanks only holds no setting (a usage error, exit 2)
printf '   \n\t\n' >"$TMPDIR/blank"
"$MEMSNAP" whatif --configs "$TMPDIR/blank" testdata/snapshots/dynamic_oom.pickle 2>&1 | sed "s|$TMPDIR|DIR|"
echo "exit ${PIPESTATUS[0]}"
# a --configs file that is no text: the line and the byte, not the bytes themselves
printf 'expandable_segments:True\n\001\377\n' >"$TMPDIR/binary"
"$MEMSNAP" whatif --configs "$TMPDIR/binary" testdata/snapshots/dynamic_oom.pickle 2>&1 | sed "s|$TMPDIR|DIR|"
echo "exit ${PIPESTATUS[0]}"
# comments from '#' to the end of a line, and blanks around a setting, are not part of it
printf '  expandable_segments:True   # the fix\n# a whole line\n\t max_split_size_mb:128\t\nrecorded # as it ran\n' >"$TMPDIR/commented"
"$MEMSNAP" -q whatif --json --configs "$TMPDIR/commented" testdata/snapshots/dynamic_oom.pickle |
	python3 -c 'import json, sys
d = json.load(sys.stdin)
d = d[0] if isinstance(d, list) else d
print("settings:", [(s["alloc_conf"], s["recorded"]) for s in d["settings"]])'
