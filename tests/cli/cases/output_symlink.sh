# An output named by a symbolic link is written through it: a link to a regular file keeps its
# link (the target is replaced, whole), a link to a device or to nothing yet is written in
# place; the link itself is never replaced by a regular file.
s=testdata/snapshots/dynamic_oom.pickle
cd "$TMPDIR" || exit 1
echo old >target.xml
ln -s target.xml link.xml
ln -s /dev/null null.xml
ln -s new-target.xml dangling.xml
src=$OLDPWD/$s
for out in link.xml null.xml dangling.xml; do
	"$MEMSNAP" -q check --allow-oom --junit "$out" "$src" >/dev/null
	echo "$out: exit $? $(test -L "$out" && echo "still a link to $(readlink "$out")")"
done
head -c 38 target.xml; echo
head -c 38 new-target.xml; echo
ln -s page.html link.html
echo old >page.html
"$MEMSNAP" -q render "$src" -o link.html
echo "render through a link: exit $? $(test -L link.html && echo still a link) $(head -c 15 page.html)"
