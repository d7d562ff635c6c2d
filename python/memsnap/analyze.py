"""memsnap's analyses from Python: a file read once, each question answered with the dict that
the command's --json prints. It calls libmemsnap (docs/LIBRARY.md) through ctypes: no
subprocess, and no code that a pickle carries is ever run.

    import memsnap
    with memsnap.open("snapshot.pickle") as f:
        print(f.explain()["verdict"])
        rows = f.whatif(configs=["expandable_segments:True"], limit="8GiB")["settings"]

Options are named as the command's flags (alloc_conf=, limit=, device_memory=, device=, ...).
Exit codes 1 (the file cannot answer) and 2 (a question or option memsnap does not take) raise
MemsnapError with the command's one-line message; 3 (a replay ran out of memory), 4 (verify
found a divergence) and 5 (check found a budget exceeded) are answers: the dict says so.
Misuse from Python raises as Python does: ValueError (a closed file, whatif(configs=[])) and
TypeError (an option's value that is no number, string or boolean).
"""

import contextlib
import ctypes
import json
import os
import threading

__all__ = ["open", "File", "MemsnapError"]

_MSG = 1024


class MemsnapError(Exception):
    """A question memsnap could not answer: code 1 (the file cannot answer: unreadable,
    nothing on the device asked) or 2 (a question or option memsnap does not take), with the
    command's one-line message."""

    def __init__(self, message, code):
        super().__init__(message)
        self.message = message
        self.code = code


_lib = None
_lock = threading.Lock()


def _candidates():
    d = os.environ.get("MEMSNAP_LIBDIR")
    if d:
        yield os.path.join(d, "libmemsnap.so.0")
    # installed (P/lib/memsnap/python/memsnap) or built (build/lib/...): the library in P/lib
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(here))),
                       "libmemsnap.so.0")
    yield "libmemsnap.so.0"


def _load():
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for cand in _candidates():
            if os.sep in cand and not os.path.exists(cand):
                tried.append(cand)
                continue
            try:
                lib = ctypes.CDLL(cand)
                break
            except OSError as e:
                tried.append(f"{cand} ({e})")
        else:
            raise OSError("memsnap: libmemsnap.so.0 not found (tried " + ", ".join(tried) +
                          "; MEMSNAP_LIBDIR names its folder)")
        vp, cp = ctypes.c_void_p, ctypes.c_char_p
        lib.ms_file_open.argtypes = [cp, ctypes.POINTER(vp), cp, ctypes.c_size_t]
        lib.ms_file_close.argtypes = [vp]
        lib.ms_file_warning.argtypes = [vp]
        lib.ms_file_warning.restype = cp
        lib.ms_ask.argtypes = [vp, cp, ctypes.POINTER(cp), ctypes.c_size_t, ctypes.POINTER(vp),
                               cp, ctypes.c_size_t]
        lib.ms_compare.argtypes = [vp, vp, ctypes.POINTER(cp), ctypes.c_size_t,
                                   ctypes.POINTER(vp), cp, ctypes.c_size_t]
        lib.ms_json_free.argtypes = [vp]
        _lib = lib
        return lib


def _value(name, v):
    """An option's value as the command's flag takes it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    raise TypeError(f"memsnap: option {name}: {type(v).__name__} is not a number or a string")


def _options(device, options):
    out = []
    if device is not None and "device" not in options:
        out.append(f"device={_value('device', device)}")
    for name, v in options.items():
        if v is None:
            continue
        if name == "configs":
            out += [f"config={_value('configs', c)}" for c in v]
        elif name == "categories" and isinstance(v, dict):
            # your own categories, {name: regular expression}, in their order
            out += [f"category={k}={_value('categories', r)}" for k, r in v.items()]
        else:
            out.append(f"{name}={_value(name, v)}")
    return out


def _answer(call, options):
    """Run one library call that writes JSON: its dict, or MemsnapError."""
    lib = _load()
    enc = [o.encode() for o in options]
    arr = (ctypes.c_char_p * max(len(enc), 1))(*enc)
    out = ctypes.c_void_p()
    msg = ctypes.create_string_buffer(_MSG)
    rc = call(lib, arr, len(enc), ctypes.byref(out), msg, _MSG)
    if not out.value:
        raise MemsnapError(msg.value.decode(errors="replace") or f"exit {rc}", rc)
    try:
        return json.loads(ctypes.string_at(out.value).decode())
    finally:
        lib.ms_json_free(out)


class File:
    """One input read whole once (a memsnap trace, or a PyTorch snapshot: pickle or JSON, plain,
    .zst or .gz); its questions may be asked from several threads at once. device= is the
    device every question is about unless one names another (None: every device with events).
    """

    def __init__(self, path, device=None):
        lib = _load()
        self.path = os.fsdecode(os.fspath(path))
        self.device = device
        # calls in progress hold the handle: close() waits for them, and none starts after it
        self._cv = threading.Condition()
        self._busy = 0
        self._closing = False
        self._h = ctypes.c_void_p()
        msg = ctypes.create_string_buffer(_MSG)
        rc = lib.ms_file_open(os.fsencode(self.path), ctypes.byref(self._h), msg, _MSG)
        if rc:
            raise MemsnapError(msg.value.decode(errors="replace"), rc)

    @property
    def warning(self):
        """What reading the file warned of (a recording cut short), or None."""
        with self._held() as h:
            w = _load().ms_file_warning(h)
            return w.decode(errors="replace") if w else None

    @contextlib.contextmanager
    def _held(self):
        """The handle, kept open while the block runs (ValueError: the file is closed)."""
        with self._cv:
            if not self._h or self._closing:
                raise ValueError("memsnap: the file is closed")
            self._busy += 1
            h = self._h
        try:
            yield h
        finally:
            with self._cv:
                self._busy -= 1
                self._cv.notify_all()

    def _ask(self, question, options, device=True):
        opts = _options(self.device if device else None, options)
        with self._held() as h:
            return _answer(lambda lib, a, n, out, msg, cap:
                           lib.ms_ask(h, question.encode(), a, n, out, msg, cap), opts)

    def info(self):
        """memsnap info --json: what the file holds (its devices, events, segments)."""
        return self._ask("info", {}, device=False)

    def stats(self, **options):
        """memsnap stats --json: peaks, top sites, what is live at the end."""
        return self._ask("stats", options)

    def replay(self, **options):
        """memsnap replay --json: the trace against the allocator model (alloc_conf=, limit=,
        memory_fraction=, device_memory=)."""
        return self._ask("replay", options)

    def verify(self, **options):
        """memsnap verify --json: the replay's segments against the recorded ones."""
        return self._ask("verify", options)

    def explain(self, **options):
        """memsnap explain --json: what holds the memory, the verdict, what to change."""
        return self._ask("explain", options)

    def whatif(self, configs=None, **options):
        """memsnap whatif --json: each setting replayed (configs: PYTORCH_CUDA_ALLOC_CONF
        strings, "recorded" for the trace's own; None: the default matrix)."""
        if configs is not None:
            if isinstance(configs, str):
                configs = [configs]
            configs = list(configs)
            if not configs:
                raise ValueError("memsnap: whatif(configs=[]): no setting to try (None: the "
                                 "default matrix)")
            options = dict(options, configs=configs)
        return self._ask("whatif", options)

    def check(self, **budgets):
        """memsnap check --json: the run against budgets (max_peak_reserved=,
        max_peak_allocated=, max_fragmentation=, max_growth_per_step=, baseline= with
        max_growth=, allow_oom=, allow_cut_short=) and the replay's options."""
        return self._ask("check", budgets)

    def diff(self, other, **options):
        """memsnap diff --json: what changed from this file to other (a File or a path)."""
        opts = _options(self.device, options)
        with self._held() as h:
            own = not isinstance(other, File)
            b = File(other) if own else other
            try:
                with b._held() as bh:
                    return _answer(lambda lib, a, n, out, msg, cap:
                                   lib.ms_compare(h, bh, a, n, out, msg, cap), opts)
            finally:
                if own:
                    b.close()

    def close(self):
        """Free the file, once the questions being asked of it on other threads are
        answered; later questions raise ValueError."""
        with self._cv:
            if not self._h or self._closing:
                return
            self._closing = True
            while self._busy:
                self._cv.wait()
            h, self._h = self._h, ctypes.c_void_p()
        _load().ms_file_close(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if getattr(self, "_cv", None) is not None:
                self.close()
        except Exception:
            pass

    def __repr__(self):
        return f"memsnap.File({self.path!r}{'' if self._h else ', closed'})"


def open(path, device=None):  # noqa: A001 (memsnap.open, as the API names it)
    """The file at path, read whole once: ask it questions (info(), explain(), ...)."""
    return File(path, device)
