"""Events given to memsnap's recorder through its C API, as PyTorch's allocator would record
them: a segment and the block at its start, then the block's free. The plugin's tests run
without a GPU on these (memsnap.record_events records them)."""
import ctypes

import memsnap

ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC, OOM = 0, 1, 2, 3, 8
MiB = 1 << 20


class Event(ctypes.Structure):
    _fields_ = [("action", ctypes.c_uint8), ("source", ctypes.c_uint8),
                ("device", ctypes.c_uint16), ("stack", ctypes.c_uint32),
                ("addr", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("stream", ctypes.c_uint64), ("t_ns", ctypes.c_int64)]


_next = [1 << 32]


def _record(action, addr, size):
    if not memsnap.is_recording():  # pytest without --memsnap: nothing recorded, no library
        return
    lib = memsnap._load()
    lib.msr_record.argtypes = [ctypes.c_void_p, ctypes.POINTER(Event)]
    r = lib.msr_global()
    assert r, "no recorder: run pytest with --memsnap"
    assert lib.msr_record(r, ctypes.byref(Event(action, 0, 0, 0, addr, size, 0, 0))) == 0


def new_segment_block(size, segment=None):
    """A new segment (segment bytes, default size) and a block of size at its start."""
    addr = _next[0]
    _next[0] += 1 << 32
    _record(SEGMENT_ALLOC, addr, segment or size)
    _record(ALLOC, addr, size)
    return addr


def free(addr, size):
    _record(FREE_REQUESTED, addr, size)
    _record(FREE_COMPLETED, addr, size)


def oom(size):
    _record(OOM, 0, size)
