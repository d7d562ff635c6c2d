# Usage errors before the command: one line, the first usage line and where the rest is (exit 2);
# bytes that are no trace from a pipe or a device: "unknown file type", not "empty file"
"$MEMSNAP" --bogus replay x 2>&1
echo "exit $?"
"$MEMSNAP" zzzzzzzzzzzz x 2>&1
echo "exit $?"
printf 'hello world\n' | "$MEMSNAP" stats - 2>&1
echo "exit $?"
head -c 4096 /dev/zero | "$MEMSNAP" info - 2>&1
echo "exit $?"
: | "$MEMSNAP" info - 2>&1
echo "exit $?"
