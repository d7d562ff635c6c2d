"""Started by `memsnap record` (through its sitecustomize.py): record this Python process.

The recording starts when PyTorch initialises CUDA; importing torch is not forced. Until
then the CUDA interposer (if preloaded) keeps raw CUDA events waiting for the trace.
"""

import importlib.abc
import importlib.util
import os
import sys


def _begin():
    import memsnap
    try:
        memsnap.record(os.environ["MEMSNAP_RECORD"],
                       stacks=os.environ.get("MEMSNAP_RECORD_STACKS") or None,
                       max_frames=int(os.environ.get("MEMSNAP_RECORD_MAX_FRAMES", "64")),
                       flush_ms=int(os.environ.get("MEMSNAP_RECORD_FLUSH_MS", "100")))
    except Exception as e:  # the program runs on; the launcher reports a missing trace
        print(f"memsnap: not recording: {e}", file=sys.stderr)


class _TorchWatch(importlib.abc.MetaPathFinder):
    """Calls _begin() right after `import torch` completes."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def run(module):
            exec_module(module)
            _begin()
        spec.loader.exec_module = run
        return spec


def install():
    if os.environ.get("MEMSNAP_RECORD_TORCH", "1") != "0":
        try:  # the interposer waits for the PyTorch side to open the trace
            import ctypes
            ctypes.CDLL(None).memsnap_cuda_defer(1)
        except (AttributeError, OSError):
            pass
        if "torch" in sys.modules:
            _begin()
        else:
            sys.meta_path.insert(0, _TorchWatch())
