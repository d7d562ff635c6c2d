"""A small suite for the plugin's tests: one test within its budget, one over, one that leaks."""
import os

import pytest
from recorder_events import MiB, free, new_segment_block, oom

SCALE = int(os.environ.get("INNER_SCALE", "1"))


@pytest.mark.gpu_memory(max_reserved="1MiB")
def test_before_any_event():
    pass  # nothing recorded yet: 0 bytes, measured, within the budget


@pytest.fixture
def maybe_skip():
    if os.environ.get("INNER_SKIP"):
        pytest.skip("skipped in its setup")


def test_small(maybe_skip):
    a = new_segment_block(2 * MiB, 20 * MiB)  # a small request: PyTorch's 20 MiB segment
    free(a, 2 * MiB)


@pytest.mark.gpu_memory(max_reserved="64MiB")
def test_over_budget():
    a = new_segment_block(100 * MiB * SCALE)
    free(a, 100 * MiB * SCALE)


@pytest.mark.gpu_memory(max_allocated="10MiB")
def test_leaks():
    new_segment_block(16 * MiB)  # never freed


@pytest.mark.gpu_memory(max_reserved="1GiB", max_allocated="1GiB")
def test_within_budget():
    a = new_segment_block(30 * MiB * SCALE)
    free(a, 30 * MiB * SCALE)


def test_dies_of_oom():
    # no budget: it fails on its own, of an OOM inside it, which the summary explains
    oom(1 << 40)
    if os.environ.get("INNER_SKIP") is None and __import__("memsnap").is_recording():
        raise MemoryError("CUDA out of memory (as torch.OutOfMemoryError says it)")


@pytest.mark.gpu_memory(allow_oom=True)
def test_oom_allowed():
    oom(1 << 40)


@pytest.mark.gpu_memory()
def test_oom_not_allowed():
    oom(1 << 40)


def test_no_library_without_memsnap(request):
    import memsnap
    if not request.config.getoption("memsnap"):
        assert memsnap._lib is None and memsnap.analyze._lib is None
