"""PyTorch's own figures of each test, the truth the plugin's are judged by: the peaks of
torch.cuda.memory_stats() from the start of its setup (reset there) to the end of its call, and
what was reserved and allocated at its start; into $MEMSNAP_TRUTH (JSON) after the run."""
import json
import os

import pytest
import torch

_truth = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # after the plugin's own setup hook (registered first, tryfirst too): the window is open
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    _truth[item.nodeid] = {"reserved_bytes_at_start": torch.cuda.memory_reserved(),
                           "allocated_bytes_at_start": torch.cuda.memory_allocated()}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield
    torch.cuda.synchronize()
    t = _truth[item.nodeid]
    t["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    t["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()


def pytest_sessionfinish(session):
    out = os.environ.get("MEMSNAP_TRUTH")
    if out:
        with open(out, "w") as f:
            json.dump({"torch": torch.__version__, "tests": _truth}, f, indent=1,
                      sort_keys=True)
