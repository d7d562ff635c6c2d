"""Record every CUDA memory event of a PyTorch program into a memsnap trace.

    import memsnap
    memsnap.record("trace.zst")            # or: memsnap record -o trace.zst -- python train.py
    for i, batch in enumerate(loader):
        with memsnap.phase("forward"):
            loss = model(batch)
        memsnap.step(i)

Events stream to the file as they happen (a frame at least every 100 ms), from
PyTorch's caching allocator through its trace tracker, and from raw CUDA calls
when the process runs under `memsnap record` (the LD_PRELOAD interposer). The
trace is finished at exit; `memsnap replay/render trace.zst` read it.

This module needs the libraries built with memsnap: libmemsnap_recorder and
libmemsnap_torch, found in $MEMSNAP_LIBDIR or next to this package.

memsnap.open(path) reads a trace or a snapshot and answers memsnap's questions with the
commands' JSON as dicts (analyze.py, over libmemsnap).
"""

import contextlib
import ctypes
import os
import threading

from .analyze import File, MemsnapError, open  # noqa: A004 (the analyses: analyze.py)

__all__ = ["record", "record_events", "stop", "flush", "phase", "step", "mark", "is_recording", "dropped",
           "open", "File", "MemsnapError"]

MSR_F_SIGNALS = 1
MSR_F_ATEXIT = 2
_ANN_PHASE, _ANN_STEP = 1, 2
_START, _END, _MARK = 0, 1, 2
# the phase around every torch.cuda.empty_cache() (common/event.h MS_EMPTY_CACHE_PHASE): the
# replay empties its model's cache there, also where the call had nothing to give back
_EMPTY_CACHE_PHASE = "torch.cuda.empty_cache"
# a mark for each torch.cuda.MemPool made with no_split=True or use_on_oom=True, its id after
# it, and a phase around each torch.cuda.use_mem_pool (common/event.h): the replay never splits
# a no_split pool's blocks, and chooses again where the allocator fell back to a use_on_oom pool
_NO_SPLIT_MARK = "torch.cuda.MemPool(no_split=True) "
_USE_ON_OOM_MARK = "torch.cuda.MemPool(use_on_oom=True) "
_USE_MEM_POOL_PHASE = "torch.cuda.use_mem_pool "
# a phase around each CUDA graph capture (common/event.h MS_GRAPH_CAPTURE_PHASE): while one is
# open the allocator never gives cached segments back
_CAPTURE_PHASE = "torch.cuda.CUDAGraph capture"
# a mark for each torch.cuda.set_per_process_memory_fraction, with the limit it set in bytes on
# the mark's device (common/event.h MS_MEMORY_FRACTION_MARK): the replay applies it there
_FRACTION_MARK = "torch.cuda.set_per_process_memory_fraction "
# a mark of what cudaMemGetInfo says of the mark's device, free then total bytes
# (common/event.h MS_DEVICE_MEMORY_MARK): beside PyTorch's reserved bytes it measures the memory
# held outside PyTorch (the CUDA context, NCCL's buffers, other libraries and processes)
_DEVICE_MEMORY_MARK = "cudaMemGetInfo "


class _Device(ctypes.Structure):
    _fields_ = [("index", ctypes.c_uint32), ("name", ctypes.c_char_p),
                ("total_memory", ctypes.c_uint64)]


class _Settings(ctypes.Structure):
    _fields_ = [("alloc_conf", ctypes.c_char_p), ("max_split_size", ctypes.c_int64),
                ("garbage_collection_threshold", ctypes.c_double),
                ("expandable_segments", ctypes.c_int),
                ("release_lock_on_cudamalloc", ctypes.c_int),
                ("pinned_use_cuda_host_register", ctypes.c_int),
                ("graph_capture_record_stream_reuse", ctypes.c_int),
                ("pinned_num_register_threads", ctypes.c_int64),
                ("roundup_power2_divisions", ctypes.c_uint32 * 16)]


class _Options(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint),
                ("flush_ms", ctypes.c_uint), ("ring_events", ctypes.c_uint),
                ("max_threads", ctypes.c_uint), ("level", ctypes.c_int),
                ("producer", ctypes.c_char_p), ("torch_version", ctypes.c_char_p),
                ("limit_bytes", ctypes.c_int64), ("devices", ctypes.POINTER(_Device)),
                ("n_devices", ctypes.c_uint), ("settings", ctypes.POINTER(_Settings))]


_lock = threading.Lock()
_lib = None      # libmemsnap_recorder
_plugin = None   # libmemsnap_torch
_rec = None      # the struct msr * this module opened (or found)
_pending = None  # arguments of a record() waiting for CUDA initialisation
_on_start = []   # called once a record() waiting for CUDA begins (the pytest plugin's)


def _libdir():
    """P/lib/memsnap: libmemsnap_torch there, libmemsnap_recorder in P/lib (an installation
    under P, or a build tree laid out as one; this file is P/lib/memsnap/python/memsnap/)."""
    d = os.environ.get("MEMSNAP_LIBDIR")
    if d:
        return d
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(here))


def _load():
    global _lib
    if _lib is not None:
        return _lib
    d = _libdir()
    for cand in (os.path.join(d, "libmemsnap_recorder.so.0"),
                 os.path.join(os.path.dirname(d), "libmemsnap_recorder.so.0"),
                 "libmemsnap_recorder.so.0"):
        if os.sep not in cand or os.path.exists(cand):
            try:
                lib = ctypes.CDLL(cand, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError:
                continue
    else:
        how = "$MEMSNAP_LIBDIR" if os.environ.get("MEMSNAP_LIBDIR") else "beside this package"
        raise OSError(f"memsnap: libmemsnap_recorder.so.0 is neither in {d} nor in "
                      f"{os.path.dirname(d)} ({how}) nor on the loader's path: set "
                      "MEMSNAP_LIBDIR to the folder of libmemsnap_torch (P/lib/memsnap of an "
                      "installation, lib/memsnap of a build)")
    lib.msr_options_init.argtypes = [ctypes.POINTER(_Options)]
    lib.msr_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Options),
                             ctypes.POINTER(ctypes.c_void_p)]
    lib.msr_global.restype = ctypes.c_void_p
    lib.msr_set_global.restype = ctypes.c_void_p
    lib.msr_set_global.argtypes = [ctypes.c_void_p]
    lib.msr_annotate.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
                                 ctypes.c_uint16]
    lib.msr_flush.argtypes = [ctypes.c_void_p]
    lib.msr_finish.argtypes = [ctypes.c_void_p]
    lib.msr_dropped.argtypes = [ctypes.c_void_p]
    lib.msr_dropped.restype = ctypes.c_uint64
    _lib = lib
    return lib


def _load_plugin():
    global _plugin
    if _plugin is None:
        path = os.path.join(_libdir(), "libmemsnap_torch.so")
        if not os.path.exists(path):
            raise OSError(f"memsnap: {path} not found: memsnap was built without PyTorch "
                          "(MEMSNAP_TORCH)")
        _plugin = ctypes.CDLL(path)
        _plugin.memsnap_torch_attach.argtypes = [ctypes.c_int, ctypes.c_uint]
    return _plugin


def _settings(torch):
    """PyTorch's allocator_settings as the trace header stores them (None if unknown)."""
    try:
        s = torch.cuda.memory._snapshot().get("allocator_settings")
    except Exception:
        return None
    if not isinstance(s, dict):
        return None
    st = _Settings()
    st.alloc_conf = str(s.get("PYTORCH_CUDA_ALLOC_CONF", "")).encode()
    st.max_split_size = int(s.get("max_split_size", -1))
    st.garbage_collection_threshold = float(s.get("garbage_collection_threshold", 0.0))
    st.expandable_segments = int(bool(s.get("expandable_segments", False)))
    st.release_lock_on_cudamalloc = int(bool(s.get("release_lock_on_cudamalloc", False)))
    st.pinned_use_cuda_host_register = int(bool(s.get("pinned_use_cuda_host_register", False)))
    st.graph_capture_record_stream_reuse = int(
        bool(s.get("graph_capture_record_stream_reuse", False)))
    st.pinned_num_register_threads = int(s.get("pinned_num_register_threads", 1))
    div = s.get("roundup_power2_divisions", {})
    if isinstance(div, dict):  # keys "1".."32768": the interval's lower bound in MiB
        for k, v in div.items():
            e = max(0, min(15, int(k).bit_length() - 1))
            st.roundup_power2_divisions[e] = int(v)
    elif isinstance(div, int):
        for e in range(16):
            st.roundup_power2_divisions[e] = div
    return st


def trace_path(path):
    """The file this process records to: `path`, or `stem.PID.zst` in a process started by
    the one `memsnap record` launched (so that workers never overwrite the main trace)."""
    root = os.environ.get("MEMSNAP_RECORD_ROOT_PID")
    if root and root != str(os.getpid()):
        stem = path[:-4] if path.endswith(".zst") else path
        return f"{stem}.{os.getpid()}.zst"
    return path


def _current_device():
    """The device this process works on now (0 where CUDA cannot say)."""
    try:
        import torch
        if torch.cuda.is_initialized():
            return torch.cuda.current_device()
    except Exception:  # noqa: BLE001
        pass
    return 0


def _mark_device_memory(dev):
    """Mark what cudaMemGetInfo says of device dev now. Only where the device's CUDA context
    exists already: measuring must not make one (a rank would hold memory on another's GPU)."""
    r = _rec
    if r is None:
        return
    try:
        import torch
        has = getattr(torch._C, "_cuda_hasPrimaryContext", None)
        if has is None or not has(dev):
            return
        free, total = torch.cuda.mem_get_info(dev)
    except Exception:  # noqa: BLE001 -- nothing measured, nothing marked
        return
    _lib.msr_annotate(r, _ANN_PHASE, _MARK, f"{_DEVICE_MEMORY_MARK}{int(free)} {int(total)}"
                      .encode(), dev)


def _mark_all_device_memory(torch):
    """Mark what cudaMemGetInfo says of each device this process has a context on."""
    try:
        n = torch.cuda.device_count()
    except Exception:  # noqa: BLE001
        return
    for dev in range(n):
        _mark_device_memory(dev)


def _start(path, stacks, max_frames, flush_ms):
    """Open the trace and attach to PyTorch's allocator; CUDA is initialised."""
    global _rec
    import torch
    lib = _load()
    plugin = _load_plugin()
    with _lock:
        if _rec is not None:
            return
        r = lib.msr_global()
        if not r:  # the interposer has not opened one: open it with what PyTorch knows
            n = torch.cuda.device_count()
            devs = (_Device * max(n, 1))()
            for i in range(n):
                p = torch.cuda.get_device_properties(i)
                devs[i] = _Device(i, p.name.encode(), int(p.total_memory))
            st = _settings(torch)
            o = _Options()
            lib.msr_options_init(ctypes.byref(o))
            o.flags = MSR_F_SIGNALS | MSR_F_ATEXIT
            o.flush_ms = flush_ms
            o.producer = b"memsnap-recorder (torch)"
            o.torch_version = torch.__version__.encode()
            o.devices = devs
            o.n_devices = n
            o.settings = ctypes.pointer(st) if st is not None else None
            out = ctypes.c_void_p()
            rc = lib.msr_open(trace_path(path).encode(), ctypes.byref(o), ctypes.byref(out))
            if rc:
                raise OSError(-rc, f"memsnap: cannot record to {trace_path(path)}: "
                                   f"{os.strerror(-rc)}")
            r = out.value
            lib.msr_set_global(r)
        if plugin.memsnap_torch_attach(1 if stacks == "python" else 0, max_frames) != 0:
            raise RuntimeError("memsnap: Python stacks are not supported on this interpreter")
        _mark_empty_cache(torch)
        _mark_optimizer_steps(torch)
        _mark_mempools(torch)
        _mark_use_mem_pool(torch)
        _mark_memory_fraction(torch)
        _mark_captures(torch)
        _rec = r
    # what each device this process has a context on holds outside PyTorch as recording starts
    _mark_all_device_memory(torch)
    for f in list(_on_start):
        f()


_optimizer_hooks = None


def _mark_optimizer_steps(torch):
    """Every optimizer step inside a phase named as PyTorch's own annotation names it
    ("Optimizer.step#AdamW.step"): what the step allocates and keeps is the optimizer's state."""
    global _optimizer_hooks
    import importlib
    try:  # the module: torch.optim's namespace need not keep the name
        opt = importlib.import_module("torch.optim.optimizer")
    except ImportError:
        return
    if _optimizer_hooks is not None or not hasattr(opt, "register_optimizer_step_pre_hook"):
        return

    def name(o):
        return f"Optimizer.step#{type(o).__name__}.step".encode()

    def device():
        try:  # the optimizer works on the current device, as PyTorch's annotation says
            return torch.cuda.current_device()
        except Exception:  # noqa: BLE001
            return 0

    def pre(o, args, kwargs):
        r = _rec
        if r is not None:
            _lib.msr_annotate(r, _ANN_PHASE, _START, name(o), device())

    def post(o, args, kwargs):
        r = _rec
        if r is not None:
            _lib.msr_annotate(r, _ANN_PHASE, _END, name(o), device())
            # every device the process has a context on: an optimizer over a model that spans
            # devices steps them all, and PyTorch's annotation names the current one only
            _mark_all_device_memory(torch)

    _optimizer_hooks = (opt.register_optimizer_step_pre_hook(pre),
                        opt.register_optimizer_step_post_hook(post))


def _mark_mempools(torch):
    """Mark each torch.cuda.MemPool made with no_split=True or use_on_oom=True: a snapshot does
    not say which pools split their blocks or serve the default pool's requests when it is full,
    and the replay must know."""
    pool = getattr(torch.cuda, "MemPool", None)
    if pool is None or getattr(pool.__init__, "_memsnap_marks", False):
        return
    import inspect
    orig = pool.__init__
    try:
        sig = inspect.signature(orig)
    except (TypeError, ValueError):
        return
    flags = [(k, m) for k, m in (("no_split", _NO_SPLIT_MARK), ("use_on_oom", _USE_ON_OOM_MARK))
             if k in sig.parameters]
    if not flags:
        return

    def __init__(self, *args, **kwargs):
        orig(self, *args, **kwargs)
        r = _rec
        if r is None:
            return
        try:
            given = sig.bind(self, *args, **kwargs).arguments
        except TypeError:
            return
        a, b = self.id
        for key, mark in flags:
            if given.get(key, False):
                _lib.msr_annotate(r, _ANN_PHASE, _MARK, f"{mark}({a}, {b})".encode(), 0)

    __init__.__doc__ = orig.__doc__
    __init__.__wrapped__ = orig
    __init__._memsnap_marks = True
    pool.__init__ = __init__


def _mark_use_mem_pool(torch):
    """Put each torch.cuda.use_mem_pool inside a phase naming its pool: the allocations that
    PyTorch puts in a use_on_oom pool outside any were its fallback's choice, not the program's.
    use_mem_pool calls torch.cuda.memory's _cuda_beginAllocateCurrentThreadToPool and
    _cuda_endAllocateToPool by those names; where a version has neither, nothing is marked."""
    mem = torch.cuda.memory
    begin = getattr(mem, "_cuda_beginAllocateCurrentThreadToPool", None)
    end = getattr(mem, "_cuda_endAllocateToPool", None)
    if begin is None or end is None or getattr(begin, "_memsnap_marks", False):
        return

    def mark(stage, device, pool_id):
        r = _rec
        if r is None:
            return
        try:
            a, b = pool_id
            name = f"{_USE_MEM_POOL_PHASE}({int(a)}, {int(b)})".encode()
        except (TypeError, ValueError):
            return
        _lib.msr_annotate(r, _ANN_PHASE, stage, name, int(device) if device is not None else 0)

    def begin_marked(device, pool_id, *args, **kwargs):
        out = begin(device, pool_id, *args, **kwargs)
        mark(_START, device, pool_id)
        return out

    def end_marked(device, pool_id, *args, **kwargs):
        mark(_END, device, pool_id)
        return end(device, pool_id, *args, **kwargs)

    for f, o in ((begin_marked, begin), (end_marked, end)):
        f.__doc__ = getattr(o, "__doc__", None)
        f.__wrapped__ = o
        f._memsnap_marks = True
    mem._cuda_beginAllocateCurrentThreadToPool = begin_marked
    mem._cuda_endAllocateToPool = end_marked


def _mark_captures(torch):
    """Put each CUDA graph capture (torch.cuda.CUDAGraph's capture_begin to capture_end, which
    torch.cuda.graph, make_graphed_callables and torch.compile's graph trees call) inside a
    phase: while one is underway the allocator never gives cached segments back, and the trace
    does not otherwise say when one was."""
    graph = getattr(torch.cuda, "CUDAGraph", None)
    if graph is None or getattr(graph.capture_begin, "_memsnap_marks", False):
        return
    begin, end = graph.capture_begin, graph.capture_end

    def mark(stage):
        r = _rec
        if r is not None:
            _lib.msr_annotate(r, _ANN_PHASE, stage, _CAPTURE_PHASE.encode(),
                              torch.cuda.current_device())

    def capture_begin(self, *args, **kwargs):
        out = begin(self, *args, **kwargs)
        mark(_START)
        return out

    def capture_end(self, *args, **kwargs):
        # A capture_end that raises has, in all but its last steps, failed before it ended the
        # allocator's capture (CUDAGraph::capture_end: cudaStreamEndCapture, then
        # endAllocateToPool): the allocator goes on as if the capture were underway, never
        # giving cached segments of the default pools back, so the phase stays open too.
        out = end(self, *args, **kwargs)
        mark(_END)
        return out

    for f, o in ((capture_begin, begin), (capture_end, end)):
        f.__doc__ = o.__doc__
        f.__wrapped__ = o
        f._memsnap_marks = True
    graph.capture_begin = capture_begin
    graph.capture_end = capture_end


def _mark_memory_fraction(torch):
    """Mark each torch.cuda.set_per_process_memory_fraction with the limit it set, in bytes:
    PyTorch's snapshot does not record it, and a replay without it knows the limit only where
    an OOM shows it (a use_on_oom pool's fallback, for one, needs it)."""
    mem = torch.cuda.memory
    orig = getattr(mem, "set_per_process_memory_fraction", None)
    if orig is None or getattr(orig, "_memsnap_marks", False):
        return

    def set_per_process_memory_fraction(fraction, device=None):
        out = orig(fraction, device)
        r = _rec
        if r is not None:
            try:
                dev = torch.cuda._utils._get_device_index(device, optional=True)
                # as the allocator computes it: the fraction of cudaMemGetInfo's total
                limit = int(float(fraction) * torch.cuda.mem_get_info(dev)[1])
            except Exception:  # nothing the replay could use: no mark
                return out
            _lib.msr_annotate(r, _ANN_PHASE, _MARK, f"{_FRACTION_MARK}{limit}".encode(), dev)
        return out

    set_per_process_memory_fraction.__doc__ = orig.__doc__
    set_per_process_memory_fraction.__wrapped__ = orig
    set_per_process_memory_fraction._memsnap_marks = True
    mem.set_per_process_memory_fraction = set_per_process_memory_fraction
    if getattr(torch.cuda, "set_per_process_memory_fraction", None) is orig:
        torch.cuda.set_per_process_memory_fraction = set_per_process_memory_fraction


def _mark_empty_cache(torch):
    """Put torch.cuda.empty_cache (and torch.cuda.memory's) inside a phase the replay knows.

    The call empties every device's cache; one that finds nothing to give back leaves no event,
    yet under other settings (expandable segments) the same call would have. torch.cuda.graph
    calls it by this name before each capture."""
    mem = torch.cuda.memory
    orig = mem.empty_cache
    if getattr(orig, "_memsnap_marks", False):
        return

    def empty_cache(*args, **kwargs):
        r = _rec
        if r is None:
            return orig(*args, **kwargs)
        _lib.msr_annotate(r, _ANN_PHASE, _START, _EMPTY_CACHE_PHASE.encode(), 0)
        try:
            return orig(*args, **kwargs)
        finally:
            _lib.msr_annotate(r, _ANN_PHASE, _END, _EMPTY_CACHE_PHASE.encode(), 0)

    empty_cache.__doc__ = orig.__doc__
    empty_cache.__wrapped__ = orig
    empty_cache._memsnap_marks = True
    mem.empty_cache = empty_cache
    if getattr(torch.cuda, "empty_cache", None) is orig:
        torch.cuda.empty_cache = empty_cache


def record(path, *, stacks=None, max_frames=64, flush_ms=100):
    """Record PyTorch's CUDA memory events into `path` (a memsnap .zst trace) from now on.

    stacks: None, or "python" for the Python stack of every allocation (each distinct
    stack is stored once). If CUDA is not initialised yet, recording starts the moment
    PyTorch initialises it (attaching earlier would be silently ignored by PyTorch).
    The trace is finished at exit, or by stop().
    """
    if stacks not in (None, "none", "python"):
        raise ValueError(f"memsnap.record: stacks must be None or 'python', not {stacks!r}")
    if not 1 <= flush_ms <= 100:
        raise ValueError("memsnap.record: flush_ms must be within 1..100")
    import torch
    args = (os.fspath(path), stacks, int(max_frames), int(flush_ms))
    _load()
    _load_plugin()
    if torch.cuda.is_initialized():
        _start(*args)
    else:
        torch.cuda._lazy_call(lambda: _start_quietly(*args))


def _start_quietly(*args):
    # runs inside torch.cuda's lazy initialisation: a failure here must not fail the program
    try:
        _start(*args)
    except Exception as e:
        import sys
        print(f"memsnap: not recording: {e}", file=sys.stderr)


def record_events(path, *, flush_ms=100):
    """Record into `path` only the events this process gives the recorder's C API itself
    (libmemsnap_recorder's msr_record on msr_global()), without PyTorch: a program or a test
    with an allocator of its own. phase(), step() and mark() annotate it as they do record()'s.
    The trace is finished at exit, or by stop()."""
    global _rec
    if not 1 <= flush_ms <= 100:
        raise ValueError("memsnap.record_events: flush_ms must be within 1..100")
    lib = _load()
    with _lock:
        if _rec is not None:
            return
        r = lib.msr_global()
        if not r:
            o = _Options()
            lib.msr_options_init(ctypes.byref(o))
            o.flags = MSR_F_SIGNALS | MSR_F_ATEXIT
            o.flush_ms = flush_ms
            out = ctypes.c_void_p()
            rc = lib.msr_open(trace_path(os.fspath(path)).encode(), ctypes.byref(o),
                              ctypes.byref(out))
            if rc:
                raise OSError(-rc, f"memsnap: cannot record to {trace_path(os.fspath(path))}: "
                                   f"{os.strerror(-rc)}")
            r = out.value
            lib.msr_set_global(r)
        _rec = r


def is_recording():
    return _rec is not None


def _annotate(kind, stage, name, device):
    r = _rec
    if r is not None:
        _lib.msr_annotate(r, kind, stage, str(name).encode(), device)


@contextlib.contextmanager
def phase(name, device=None):
    """A named phase (forward, backward, optimizer...), kept in the trace around its events,
    on `device` (default: the device the process is using)."""
    dev = _current_device() if device is None else device
    _annotate(_ANN_PHASE, _START, name, dev)
    try:
        yield
    finally:
        _annotate(_ANN_PHASE, _END, name, dev)


def step(n=None, device=None):
    """Mark the start of a training step (`step N`) on `device` (default: the device the
    process is using), with what each device it has a context on has free then (`device`
    given: that one's)."""
    dev = _current_device() if device is None else device
    _annotate(_ANN_STEP, _MARK, "step" if n is None else f"step {n}", dev)
    if device is None:
        try:
            import torch
            _mark_all_device_memory(torch)
        except ImportError:
            pass
    else:
        _mark_device_memory(dev)


def mark(name, device=None):
    """Mark a point in the trace with a name, on `device` (default: the device in use)."""
    _annotate(_ANN_PHASE, _MARK, name, _current_device() if device is None else device)


def flush():
    """Return once every event recorded so far is in the file."""
    if _rec is not None:
        rc = _lib.msr_flush(_rec)
        if rc:
            raise OSError(-rc, os.strerror(-rc))


def dropped():
    """Events the recorder had to drop (it never drops them silently: the trace says so)."""
    return _lib.msr_dropped(_rec) if _rec is not None else 0


def stop():
    """Stop recording and finish the trace now (it is also finished at exit)."""
    global _rec
    with _lock:
        r, _rec = _rec, None
    if r is not None:
        if _lib.msr_global() == r:
            _lib.msr_set_global(None)
        rc = _lib.msr_finish(r)
        if rc:
            raise OSError(-rc, os.strerror(-rc))
