# A command killed while it writes leaves neither a partial output nor a temporary file: convert
# reads from a pipe that never ends, and is interrupted once its temporary output exists.
root=$PWD
d=$(mktemp -d) && cd "$d" || exit 1
mkfifo in.pickle
head -c 100000 "$root/testdata/snapshots/dynamic_oom.pickle" >big.part
( cat big.part; exec sleep 30 ) >in.pickle &
feeder=$!
"$MEMSNAP" convert in.pickle -o out.zst &
pid=$!
for _ in $(seq 100); do ls out.zst.tmp.* >/dev/null 2>&1 && break; sleep 0.05; done
ls out.zst.tmp.* >/dev/null 2>&1 && echo "temporary output open"
kill -TERM $pid
wait $pid; echo "convert: exit $?"
kill $feeder 2>/dev/null; wait $feeder 2>/dev/null
ls
