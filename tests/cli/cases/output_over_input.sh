# An output that names an input (the same path, another spelling, a symbolic or a hard link) is
# refused before anything is opened for writing; the input is left byte for byte as it was.
root=$PWD
d=$(mktemp -d) && cd "$d" || exit 1
cp "$root/testdata/snapshots/dynamic_oom.pickle" x.pickle
ln -s x.pickle sym.pickle
ln x.pickle hard.pickle
sum=$(md5sum <x.pickle)
"$MEMSNAP" convert x.pickle -o x.pickle; echo "convert same path: exit $?"
"$MEMSNAP" convert x.pickle -o ./sym.pickle; echo "convert to a symbolic link: exit $?"
"$MEMSNAP" render x.pickle -o hard.pickle; echo "render to a hard link: exit $?"
"$MEMSNAP" render sym.pickle --format txt -o x.pickle; echo "render from a link to its target: exit $?"
"$MEMSNAP" convert x.pickle -o - >/dev/null; echo "convert to stdout: exit $?"
[ "$(md5sum <x.pickle)" = "$sum" ] && echo "input intact"
ls
