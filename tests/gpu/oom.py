"""Runs out of memory under a memory fraction, like a job that dies with CUDA OOM."""
import torch

torch.cuda.init()
torch.cuda.set_per_process_memory_fraction(0.05)
keep = []
n = 64 << 20
while True:  # grows until PyTorch raises torch.OutOfMemoryError (uncaught: exit 1)
    keep.append(torch.empty(n, dtype=torch.uint8, device="cuda"))
    n = n * 5 // 4
