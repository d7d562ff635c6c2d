# the OOM's holders of a stacks="all" snapshot: each named by its user code, a library's, torch's
# Python or the C++ operator (not by torch::unwind::unwind(), the innermost frame)
"$MEMSNAP" replay testdata/snapshots/edge/stacks_all.pickle | sed -n '/who holds/,$p'
