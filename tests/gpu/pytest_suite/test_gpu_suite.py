"""A GPU test suite for memsnap's pytest plugin (tests/gpu/pytest_plugin.sh runs it): a budget
judged before CUDA starts, tests within their budgets, one over its budget, one that leaks into the tests after it, one whose
steps keep more each step, and one that runs out of memory."""
import pytest
import torch

import memsnap

MiB = 1 << 20
_leaked = []


@pytest.mark.gpu_memory(max_reserved="1MiB")
def test_budget_before_cuda():
    # CUDA has not started: PyTorch holds nothing, and the budget holds (0 bytes, measured)
    assert not torch.cuda.is_initialized()


def test_first_touch():
    # CUDA starts here: the recording begins with it (and the test's window again)
    x = torch.empty(8 * MiB, dtype=torch.uint8, device="cuda")
    del x


@pytest.mark.gpu_memory(max_reserved="1GiB", max_allocated="600MiB")
def test_within_budget():
    a = torch.randn(64, 1024, 1024, device="cuda")  # 256 MiB
    b = a * 2
    del a, b


@pytest.mark.gpu_memory(max_reserved="256MiB")
def test_over_budget():
    a = torch.empty(512 * MiB, dtype=torch.uint8, device="cuda")
    del a


def test_leaks():
    _leaked.append(torch.empty(96 * MiB, dtype=torch.uint8, device="cuda"))


@pytest.mark.gpu_memory(max_growth_per_step="1MiB")
def test_steps_grow():
    keep = []
    model = torch.nn.Linear(1024, 1024).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(6):
        memsnap.step(i)
        x = torch.randn(256, 1024, device="cuda")
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        keep.append(torch.empty(8 * MiB, dtype=torch.uint8, device="cuda"))  # 8 MiB a step


@pytest.mark.gpu_memory(allow_oom=True)
def test_oom_caught():
    free, total = torch.cuda.mem_get_info()
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(total * 2, dtype=torch.uint8, device="cuda")
