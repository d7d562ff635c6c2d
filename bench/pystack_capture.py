"""The recorder's Python stack capture alone (no GPU, no PyTorch), at two stack depths: ns per
capture and recorded event from Python (minus the same loop without the capture), and ns per
capture alone in a C loop (the same frames each time, as an allocation loop has them). A note on
where recording time goes; the figure users see is bench/record_overhead.sh's step time.

    python3 bench/pystack_capture.py BUILD/tests/pystack [N]
BUILD/tests/pystack holds the test extension that drives recorder/torch/pystack.c as PyTorch's
allocator hook does (tests/recorder/pystack_module.c).
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, sys.argv[1])
import _pystack_test as m  # noqa: E402

n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
if not m.supported():
    sys.exit(f"Python {sys.version.split()[0]}: frame layout not supported")


def capture(depth, n):
    if depth:
        return capture(depth - 1, n)
    for _ in range(n):
        m.capture(False)


def capture_alone(depth, n):
    if depth:
        return capture_alone(depth - 1, n)
    return m.capture_loop(n)


def nothing(depth, n):
    if depth:
        return nothing(depth - 1, n)
    for _ in range(n):
        m.supported()


with tempfile.TemporaryDirectory() as d:
    m.open(os.path.join(d, "capture.zst"))
    for depth in (5, 30):
        t = time.perf_counter()
        capture(depth, n)
        a = time.perf_counter() - t
        t = time.perf_counter()
        nothing(depth, n)
        b = time.perf_counter() - t
        alone = capture_alone(depth, n)
        print(f"depth {depth + 3}: {1e9 * (a - b) / n:.0f} ns per capture and event "
              f"({n} captures); the capture alone {alone / n:.0f} ns")
    m.close()
