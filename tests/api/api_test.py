#!/usr/bin/env python3
"""libmemsnap (include/memsnap/analyze.h) loaded by a program: ctypes here, as the Python module
will. Each answer must be the JSON the command's --json prints, asked twice in one process and
from several threads at once; bad questions and inputs give the command's exit codes and a message;
the library exports its API alone, under a soname.

usage: api_test.py LIBMEMSNAP MEMSNAP SOURCE_DIR
"""
import ctypes
import json
import os
import subprocess
import sys
import threading

lib_path, memsnap, src = sys.argv[1:4]
lib = ctypes.CDLL(lib_path)
lib.ms_file_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                             ctypes.c_size_t]
lib.ms_file_close.argtypes = [ctypes.c_void_p]
lib.ms_ask.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                       ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                       ctypes.c_size_t]
lib.ms_compare.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p),
                           ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                           ctypes.c_size_t]
lib.ms_json_free.argtypes = [ctypes.c_void_p]
lib.ms_file_warning.argtypes = [ctypes.c_void_p]
lib.ms_file_warning.restype = ctypes.c_char_p
fails = 0


def check(ok, what):
    global fails
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    fails += not ok


def open_file(path):
    h, msg = ctypes.c_void_p(), ctypes.create_string_buffer(512)
    rc = lib.ms_file_open(path.encode(), ctypes.byref(h), msg, 512)
    return rc, h, msg.value.decode()


def ask(h, question, options=()):
    arr = (ctypes.c_char_p * max(len(options), 1))(*[o.encode() for o in options])
    out, msg = ctypes.c_void_p(), ctypes.create_string_buffer(512)
    rc = lib.ms_ask(h, question.encode(), arr, len(options), ctypes.byref(out), msg, 512)
    text = ctypes.cast(out, ctypes.c_char_p).value.decode() if out.value else None
    lib.ms_json_free(out)
    return rc, text, msg.value.decode()


def compare(a, b, options=()):
    arr = (ctypes.c_char_p * max(len(options), 1))(*[o.encode() for o in options])
    out, msg = ctypes.c_void_p(), ctypes.create_string_buffer(512)
    rc = lib.ms_compare(a, b, arr, len(options), ctypes.byref(out), msg, 512)
    text = ctypes.cast(out, ctypes.c_char_p).value.decode() if out.value else None
    lib.ms_json_free(out)
    return rc, text, msg.value.decode()


def cli(question, path, options):
    flags, configs = [], []
    for o in options:
        k, v = o.split("=", 1)
        if k == "config":
            configs.append(v)
        elif k in ("allow_oom", "allow_cut_short"):
            flags += ["--" + k.replace("_", "-")] if v == "true" else []
        else:
            flags += ["--" + k.replace("_", "-"), v]
    if configs:  # whatif takes its settings from a file, one a line
        cf = os.path.join(os.environ.get("TMPDIR", "/tmp"), "api_test_configs.%d" % os.getpid())
        with open(cf, "w") as f:
            f.write("\n".join(configs) + "\n")
        flags += ["--configs", cf]
    paths = list(path) if isinstance(path, tuple) else [path]
    p = subprocess.run([memsnap, "-q", question, "--json"] + flags + paths,
                       capture_output=True, text=True)
    return p.returncode, json.loads(p.stdout) if p.stdout.strip() else None


T = os.path.join(src, "testdata/snapshots")
cases = [
    ("info", "dynamic_oom.pickle", []),
    ("info", "multi_gpu/pipeline.zst", []),
    ("info", "multi_gpu/oom_rank1_rank0.zst", []),
    ("stats", "dynamic_oom.pickle", []),
    ("stats", "multi_gpu/pipeline.pickle.zst", []),
    ("stats", "multi_gpu/pipeline.zst", ["device=1"]),
    ("stats", "multi_gpu/oom_rank1_rank0.zst", ["site_depth=2"]),
    ("replay", "dynamic_oom.pickle", []),
    ("replay", "dynamic_oom.pickle", ["limit=5GiB"]),
    ("replay", "multi_gpu/pipeline.zst", []),
    ("replay", "multi_gpu/late_wrap.pickle.zst", []),
    ("explain", "multi_gpu/ddp_rank1.pickle.zst", ["jobs=2"]),
    ("explain", "multi_gpu/pipeline.pickle.zst", ["jobs=2"]),
    ("explain", "multi_gpu/oom_rank1_rank1.zst", ["jobs=2", "alloc_conf=expandable_segments:True"]),
    ("whatif", "dynamic_oom.pickle", ["jobs=2"]),
    ("whatif", "multi_gpu/oom_rank1_rank1.zst",
     ["jobs=2", "config=recorded", "config=expandable_segments:True"]),
    ("verify", "multi_gpu/pipeline.pickle.zst", []),
    ("verify", "dynamic_oom.pickle", ["alloc_conf=expandable_segments:True"]),
    ("check", "multi_gpu/pipeline.pickle.zst", ["max_peak_reserved=1GiB"]),
    ("check", "multi_gpu/ddp_rank1.zst", ["max_peak_reserved=3GiB", "max_growth_per_step=1MiB",
                                          "max_fragmentation=0.5"]),
    ("check", "multi_gpu/oom_rank1_rank1.pickle.zst", ["allow_oom=true"]),
    ("check", "multi_gpu/ddp_rank1.zst",
     ["baseline=" + os.path.join(src, "testdata/snapshots/multi_gpu/ddp_rank0.zst"),
      "max_growth=1%"]),
]
handles = {}
answers = {}
for question, name, options in cases:
    path = os.path.join(T, name)
    if path not in handles:
        rc, h, msg = open_file(path)
        check(rc == 0, "open %s%s" % (name, "" if rc == 0 else ": " + msg))
        handles[path] = h
    rc, text, msg = ask(handles[path], question, options)
    crc, want = cli(question, path, options)
    got = json.loads(text) if text else None
    check(rc == crc and got == want, "%s %s %s: exit %d, the command's --json%s" % (
          question, name, " ".join(options), rc, "" if got == want else " DIFFERS"))
    answers[(question, name, tuple(options))] = (rc, text)

# diff: two files, one device each (two ranks) and device with device
for a, b, options in (("multi_gpu/ddp_rank0.zst", "multi_gpu/ddp_rank1.zst", []),
                      ("multi_gpu/pipeline.pickle.zst", "multi_gpu/pipeline.zst", ["top=3"]),
                      ("dynamic_oom.pickle", "multi_gpu/oom_rank1_rank1.pickle.zst",
                       ["site_depth=2", "alloc_conf=expandable_segments:True"])):
    pa, pb = os.path.join(T, a), os.path.join(T, b)
    for p in (pa, pb):
        if p not in handles:
            handles[p] = open_file(p)[1]
    rc, text, msg = compare(handles[pa], handles[pb], options)
    crc, want = cli("diff", (pa, pb), options)
    got = json.loads(text) if text else None
    check(rc == crc == 0 and got == want, "diff %s %s %s: the command's --json%s" % (
          a, b, " ".join(options), "" if got == want else " DIFFERS " + msg))
    check(compare(handles[pa], handles[pb], options)[1] == text, "again: diff %s %s" % (a, b))
h = handles[os.path.join(T, "dynamic_oom.pickle")]
for options, want in ((["jobs=2"], 2), (["top=x"], 2), (["device=7"], 1)):
    rc, text, msg = compare(h, h, options)
    check(rc == want and text is None and msg and "\n" not in msg,
          "diff %s: exit %d: %s" % (options, rc, msg))

# what reading a file warned of, as the commands say it: a recording killed before its END
for name, want in (("multi_gpu/oom_rank1_rank1.zst", "no END record"),
                   ("dynamic_oom.pickle", None)):
    p = os.path.join(T, name)
    if p not in handles:
        handles[p] = open_file(p)[1]
    w = lib.ms_file_warning(handles[p])
    w = w.decode() if w else None
    err = subprocess.run([memsnap, "info", p], capture_output=True, text=True).stderr
    check((want in w and w in err) if want else (w is None and "warning" not in err),
          "warning of %s: %s" % (name, w))
check(lib.ms_file_warning(None) is None, "warning of no file: NULL")

# asked again in the same process: the same answer
for (question, name, options), (rc, text) in answers.items():
    again = ask(handles[os.path.join(T, name)], question, list(options))
    check(again[:2] == (rc, text), "again: %s %s" % (question, name))

# from two threads at once, over the same inputs
results = {}


def worker(k):
    results[k] = ask(handles[os.path.join(T, k[1])], k[0], list(k[2]))


keys = list(answers)
threads = [threading.Thread(target=worker, args=(k,)) for k in keys[3:5] + keys[7:9] + keys[10:12]]
for t in threads:
    t.start()
for t in threads:
    t.join()
check(all(results[k][:2] == answers[k] for k in results),
      "%d questions on %d threads at once: the same answers" % (len(results), len(threads)))

# what a caller gets wrong, and inputs that cannot answer
h = handles[os.path.join(T, "dynamic_oom.pickle")]
for question, options, want in (("replay", ["limit=lots"], 2), ("replay", ["nope=1"], 2),
                                ("whatever", [], 2), ("replay", ["device=3"], 1),
                                ("replay", ["config=expandable_segments:True"], 2),
                                ("whatif", ["config=nonsense:1"], 2), ("whatif", ["config="], 2),
                                ("replay", ["limit=11GiB", "memory_fraction=0.5"], 2),
                                ("replay", ["limit=0"], 2), ("replay", ["jobs=2"], 2),
                                ("verify", ["site_depth=5"], 2), ("info", ["device=0"], 2),
                                ("stats", ["limit=1GiB"], 2), ("whatif", ["alloc_conf=x"], 2),
                                ("replay", ["limit=1GiB\nx"], 2),
                                ("check", ["baseline=x.zst"], 2),
                                ("check", ["max_fragmentation=2"], 2),
                                ("check", ["max_peak_reserved=0"], 2),
                                ("check", ["max_peak_allocated=0GiB"], 2),
                                ("check", ["max_growth_per_step=0"], 2)):
    rc, text, msg = ask(h, question, options)
    check(rc == want and text is None and msg and "\n" not in msg,
          "%s %s: exit %d: %s" % (question, options, rc, msg))
rc, h2, msg = open_file(os.path.join(T, "no-such-file.pickle"))
check(rc == 1 and "no-such-file" in msg, "open a missing file: exit %d: %s" % (rc, msg))
for h in handles.values():
    lib.ms_file_close(h)

# the library's face: its soname, and its API alone
dyn = subprocess.run(["objdump", "-p", lib_path], capture_output=True, text=True).stdout
check("SONAME               libmemsnap.so.0" in dyn, "soname libmemsnap.so.0")
syms = subprocess.run(["nm", "-D", "--defined-only", lib_path], capture_output=True,
                      text=True).stdout.split("\n")
exported = sorted(line.split()[-1].split("@")[0] for line in syms if " T " in line)
check(exported == ["ms_ask", "ms_compare", "ms_file_close", "ms_file_open", "ms_file_warning",
                   "ms_json_free", "ms_status_name",
                   "ms_strerror", "ms_version_number"], "exports: %s" % ", ".join(exported))
sys.exit(1 if fails else 0)
