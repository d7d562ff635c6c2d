# record -o never loses a file: one that is not a memsnap trace is refused before the program
# runs, an earlier trace is kept as PATH.old
root=$PWD
d=$(mktemp -d) && cd "$d" || exit 1
cp "$root/testdata/snapshots/dynamic_oom.pickle" x.pickle
sum=$(md5sum <x.pickle)
"$MEMSNAP" record -o x.pickle -- true; echo "record over a snapshot: exit $?"
[ "$(md5sum <x.pickle)" = "$sum" ] && echo "snapshot intact"
"$MEMSNAP" convert x.pickle -o t.zst
"$MEMSNAP" record -o t.zst -- true 2>&1 | grep -o 'kept as t.zst.old'
ls
