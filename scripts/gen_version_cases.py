#!/usr/bin/env python3
"""Writes testdata/snapshots/versions/: small synthetic memory snapshots, one per snapshot layout
that PyTorch (2.0 to main) or torch_npu writes, plus README.md and expected.json.

Every file tells the same small story (see STORY below) in the layout of one release: the key
names, key order, types and pickle protocol of that release's snapshot code, as described in
docs/snapshot-versions.md. The trace and the end state agree (checked here before writing), so a
replay of the trace must end with the segments the file holds.

expected.json is computed from the Python objects written (events by action and device,
segments, reserved/allocated/active/requested bytes, block states, the version range the fields
allow), independently of memsnap.

Usage: python3 scripts/gen_version_cases.py [OUT_DIR]   (default testdata/snapshots/versions)
Nothing here is read from a real snapshot; no torch is needed.
"""
import json
import os
import pickle
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else "testdata/snapshots/versions"
PROTOCOL = 4  # _dump_snapshot calls pickle.dump(s, f): Python's default, 4 up to 3.13 (5 on 3.14)

MiB = 1 << 20
KB512 = 512


def round_size(n):
    """CUDACachingAllocator round_size with roundup_power2_divisions off."""
    return KB512 if n < KB512 else KB512 * ((n + KB512 - 1) // KB512)


# ---------------------------------------------------------------------------------------------
# Frames. Frame dicts are shared objects (torch deduplicates them), so the pickles use memo gets.

def pyframe(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


F_MODEL = pyframe("forward", "/work/model.py", 42)
F_TRAIN = pyframe("train_step", "/work/train.py", 17)
F_MAIN = pyframe("<module>", "/work/train.py", 88)
F_OPT = pyframe("step", "/work/train.py", 23)
F_CACHE = pyframe("empty_cache", "/usr/lib/python3/torch/cuda/memory.py", 224)
F_ANN = pyframe("pack_hook", "/work/train.py", 31)
STACK_ALLOC = [F_MODEL, F_TRAIN, F_MAIN]      # innermost first
STACK_FREE = [F_OPT, F_TRAIN, F_MAIN]
STACK_CACHE = [F_CACHE, F_TRAIN, F_MAIN]
STACK_ANN = [F_ANN, F_MODEL, F_TRAIN, F_MAIN]


def frames20(stack):
    """2.0 frame dicts: filename, name, line (in that order)."""
    return [{"filename": f["filename"], "name": f["name"], "line": f["line"]} for f in stack]


# ---------------------------------------------------------------------------------------------
# The story. Device 0, stream 0, default allocator settings, history recorded with context="all".
#
#  1 segment_alloc S1 2 MiB (small pool)          8 free_requested B
#  2 alloc A = S1, 1000000 (block 1000448)         9 free_completed B (block stays, C follows it)
#  3 segment_alloc S2 20 MiB (large pool)         10 free_requested A
#  4 alloc B = S2, 3000000 (block 3000320)        11 free_completed A (merges with S1's tail)
#  5 alloc C = S2+3000320, 4 MiB                  12 segment_free S1 (empty_cache, or the OOM flush)
#  6 segment_alloc S3 26 MiB (25 MiB rounded up)  13 alloc E = S2, 2000000: best fit is B's old
#  7 alloc D = S3, 25 MiB: remainder 1 MiB is        block (3000320); the 999936 left are not
#    not > 1 MiB, so D takes the whole segment       > 1 MiB, so E takes the whole block
#
# End: S2 = [E 3000320 alloc | C 4194304 alloc | 13776896 inactive], S3 = [D 27262976 alloc].

S1 = 0x7F4A3C000000
S2 = 0x7F4A3E000000
S3 = 0x7F4A42000000
S4 = 0x7F4A46000000   # a MemPool's segment (pool_id fixture)
T1 = 0x7F3B20000000   # device 1 (multi-device fixtures)
H1 = 0x7F9000000000   # pinned host memory (host fixture)
L_NPU = 0x12C2A0000000
SM_NPU = 0x12C1E0000000
STREAM_NPU = 1276474240
T0 = 1783874495854988  # time_us of the first event: microseconds since the Unix epoch

A_REQ, B_REQ, C_REQ, D_REQ, E_REQ = 1000000, 3000000, 4194304, 26214400, 2000000
A_BLK, B_BLK, C_BLK = round_size(A_REQ), round_size(B_REQ), round_size(C_REQ)
D_SEG = 13 * 2 * MiB
S2_TAIL = 20 * MiB - B_BLK - C_BLK


class Ev:
    """One allocator event, independent of any layout."""

    def __init__(self, action, addr, size, stack=None, stream=0, device=0, pool=(0, 0),
                 user_metadata="", compile_context="N/A", internal_metadata="",
                 device_free=None):
        self.action, self.addr, self.size, self.stack = action, addr, size, stack
        self.stream, self.device, self.pool = stream, device, pool
        self.user_metadata, self.compile_context = user_metadata, compile_context
        self.internal_metadata, self.device_free = internal_metadata, device_free


class Blk:
    def __init__(self, size, requested, state, stack=None):
        self.size, self.requested, self.state, self.stack = size, requested, state, stack


class Seg:
    def __init__(self, address, large, blocks, stack=None, device=0, stream=0, pool=(0, 0),
                 expandable=False):
        self.address, self.large, self.blocks, self.stack = address, large, blocks, stack
        self.device, self.stream, self.pool, self.expandable = device, stream, pool, expandable

    @property
    def total(self):
        return sum(b.size for b in self.blocks)


def story_events(oom=False, meta=None):
    """The 13 events of the story (14 with an OOM). meta: user_metadata per event index."""
    ev = [
        Ev("segment_alloc", S1, 2 * MiB, STACK_ALLOC),
        Ev("alloc", S1, A_REQ, STACK_ALLOC),
        Ev("segment_alloc", S2, 20 * MiB, STACK_ALLOC),
        Ev("alloc", S2, B_REQ, STACK_ALLOC),
        Ev("alloc", S2 + B_BLK, C_REQ, STACK_ALLOC),
        Ev("segment_alloc", S3, D_SEG, STACK_ALLOC),
        Ev("alloc", S3, D_REQ, STACK_ALLOC),
        Ev("free_requested", S2, B_REQ, STACK_FREE),
        Ev("free_completed", S2, B_REQ, STACK_FREE),
        Ev("free_requested", S1, A_REQ, STACK_FREE),
        Ev("free_completed", S1, A_REQ, STACK_FREE),
        Ev("segment_free", S1, 2 * MiB, STACK_CACHE),
    ]
    if oom:
        # an 8 GiB request: cudaMalloc fails, the retry's flush frees S1 (the segment_free
        # above), the retry fails; device_free is what cudaMemGetInfo reports after the flush
        ev.append(Ev("oom", 0, 8 << 30, STACK_ALLOC, device_free=1_000_000_000))
    ev.append(Ev("alloc", S2, E_REQ, STACK_ALLOC))
    for i, m in (meta or {}).items():
        ev[i].user_metadata = m
    return ev


def story_segments():
    return [
        Seg(S2, True, [Blk(B_BLK, E_REQ, "active_allocated", STACK_ALLOC),
                       Blk(C_BLK, C_REQ, "active_allocated", STACK_ALLOC),
                       Blk(S2_TAIL, 0, "inactive")], STACK_ALLOC),
        Seg(S3, True, [Blk(D_SEG, D_REQ, "active_allocated", STACK_ALLOC)], STACK_ALLOC),
    ]


def device1_story():
    """Device 1: small-pool splits, one free."""
    ev = [
        Ev("segment_alloc", T1, 2 * MiB, STACK_ALLOC, device=1),
        Ev("alloc", T1, 65536, STACK_ALLOC, device=1),
        Ev("alloc", T1 + 65536, 131072, STACK_ALLOC, device=1),
        Ev("free_requested", T1, 65536, STACK_FREE, device=1),
        Ev("free_completed", T1, 65536, STACK_FREE, device=1),
    ]
    seg = Seg(T1, False, [Blk(65536, 65536, "inactive", STACK_ALLOC),
                          Blk(131072, 131072, "active_allocated", STACK_ALLOC),
                          Blk(2 * MiB - 196608, 0, "inactive")], STACK_ALLOC, device=1)
    return ev, [seg]


# ---------------------------------------------------------------------------------------------
# Layouts. Each writes the dicts the way that release's snapshot code inserts the keys.

LAYOUTS = ["2.0", "2.1", "2.2", "2.3", "2.5", "2.8", "2.9", "2.10", "2.12", "2.14", "2.15"]


def at_least(v, w):
    return LAYOUTS.index(v) >= LAYOUTS.index(w)


def entry(ev, ver, t):
    """A trace entry dict. Key order: 2.0 puts frames first; later releases append frames last
    (they are filled in after symbolization)."""
    d = {}
    if ver == "2.0" and ev.stack is not None and ev.action != "snapshot":
        d["frames"] = frames20(ev.stack)
    d["action"] = ev.action
    if ev.action == "oom":
        d["device_free"] = ev.device_free
    else:
        d["addr"] = ev.addr
    d["size"] = ev.size
    d["stream"] = ev.stream
    if at_least(ver, "2.2"):
        d["time_us"] = t
    if at_least(ver, "2.8"):
        d["compile_context"] = ev.compile_context
    if at_least(ver, "2.10"):
        d["user_metadata"] = ev.user_metadata
    if at_least(ver, "2.12"):
        d["pool_id"] = tuple(ev.pool)
    if at_least(ver, "2.15") and ev.internal_metadata:
        d["internal_metadata"] = ev.internal_metadata
    if ver != "2.0" and ev.stack is not None and ev.action != "snapshot":
        d["frames"] = ev.stack
    return d


def block_dict(b, address, ver):
    if ver == "2.0":
        d = {"size": b.size, "requested_size": b.requested, "state": b.state}
        if b.stack is not None:
            d["history"] = [{"addr": address, "real_size": b.requested,
                             "frames": frames20(b.stack)}]
        return d
    d = {"address": address, "size": b.size, "requested_size": b.requested, "state": b.state}
    # 2.1+: a freed block loses its stack (2.0 kept the history of the last allocation)
    d["frames"] = b.stack if b.stack is not None and b.state != "inactive" else []
    return d


def segment_dict(s, ver, npu=False):
    active = [b for b in s.blocks if b.state != "inactive"]
    d = {"device": s.device, "address": s.address, "total_size": s.total,
         "allocated_size": sum(b.size for b in s.blocks if b.state == "active_allocated"),
         "active_size": sum(b.size for b in active),
         "requested_size": sum(b.requested for b in active),
         "stream": s.stream}
    if npu:  # torch_npu: segment_pool_id before segment_type
        d["segment_pool_id"] = tuple(s.pool)
        d["segment_type"] = "large" if s.large else "small"
    else:
        d["segment_type"] = "large" if s.large else "small"
        if ver != "2.0":
            d["segment_pool_id"] = tuple(s.pool)
    if ver != "2.0":
        d["is_expandable"] = s.expandable
    blocks, addr = [], s.address
    for b in s.blocks:
        blocks.append(block_dict(b, addr, ver))
        addr += b.size
    if ver == "2.0":
        d["blocks"] = blocks
    elif s.stack is None:   # no stack: frames=[] inserted before the blocks
        d["frames"] = []
        d["blocks"] = blocks
    else:                   # a stack: frames filled in after symbolization, after the blocks
        d["blocks"] = blocks
        d["frames"] = s.stack
    return d


def settings(ver, conf="", max_split=-1):
    d = {"PYTORCH_CUDA_ALLOC_CONF": conf, "max_split_size": max_split,
         "garbage_collection_threshold": 0.0, "expandable_segments": False,
         "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
         "pinned_use_cuda_host_register": False}
    if at_least(ver, "2.9"):
        d["graph_capture_record_stream_reuse"] = False
    d["roundup_power2_divisions"] = {str(1 << i): 0 for i in range(16)}
    return d


def snapshot(ver, events, segments, ndev=1, annotations=None, npu=False, extra_top=None,
             t0=T0, settings_conf="", max_split=-1):
    traces = [[] for _ in range(ndev)]
    for i, ev in enumerate(events):
        traces[ev.device].append(entry(ev, ver, t0 + 37 * i))
    segs = sorted(segments, key=lambda s: (s.device, s.address))
    d = {"segments": [segment_dict(s, ver, npu) for s in segs], "device_traces": traces}
    if at_least(ver, "2.3") and not npu:
        d["allocator_settings"] = settings(ver, settings_conf, max_split)
    if at_least(ver, "2.5") and not npu:
        d["external_annotations"] = annotations if annotations is not None else []
    for k, v in (extra_top or {}).items():
        d[k] = v
    return d


def annotation(stage, name, t, device=0):
    return {"stage": stage, "name": name, "device": device, "time_us": t}


# ---------------------------------------------------------------------------------------------
# Consistency: the trace and the end state must agree.

def check_consistent(name, events, segments):
    live_seg = {}       # (device, addr) -> size, from segment_alloc/map minus free/unmap
    live = {}           # (device, addr) -> requested size of allocations not free_requested
    pending = {}        # (device, addr) -> requested size, free_requested not completed
    for ev in events:
        k = (ev.device, ev.addr)
        if ev.action in ("segment_alloc", "segment_map"):
            live_seg[k] = live_seg.get(k, 0) + ev.size
        elif ev.action in ("segment_free", "segment_unmap"):
            assert live_seg.pop(k) == ev.size, (name, "segment free of an unknown size")
        elif ev.action == "alloc":
            assert k not in live and k not in pending, (name, "alloc over a live block", ev.addr)
            live[k] = ev.size
        elif ev.action == "free_requested":
            assert live.pop(k) == ev.size, (name, "free_requested size")
            pending[k] = ev.size
        elif ev.action == "free_completed":
            assert pending.pop(k) == ev.size, (name, "free_completed size")
    reserved = {}
    for (dev, _), size in live_seg.items():
        reserved[dev] = reserved.get(dev, 0) + size
    got_live, got_pending, got_reserved = {}, {}, {}
    for s in segments:
        got_reserved[s.device] = got_reserved.get(s.device, 0) + s.total
        addr = s.address
        for b in s.blocks:
            if b.state == "active_allocated":
                got_live[(s.device, addr)] = b.requested
            elif b.state == "active_pending_free":
                got_pending[(s.device, addr)] = b.requested
            addr += b.size
    assert got_live == live, (name, "allocated blocks", got_live, live)
    assert got_pending == pending, (name, "pending blocks", got_pending, pending)
    assert got_reserved == reserved, (name, "reserved bytes", got_reserved, reserved)


# ---------------------------------------------------------------------------------------------
# What a reader can tell from the fields (the decision list of docs/snapshot-versions.md).

ORDER = ["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "2.11",
         "2.12", "2.13", "2.14", "2.15", "main"]


def infer_version(snap):
    """Returns (lowest, highest, notes) as allowed by the fields present."""
    lo, hi, notes = 0, len(ORDER) - 1, []

    def at_least_(v, why):
        nonlocal lo
        if ORDER.index(v) > lo:
            lo = ORDER.index(v)
        notes.append(why)

    def at_most(v, why):
        nonlocal hi
        if ORDER.index(v) < hi:
            hi = ORDER.index(v)
        notes.append(why)

    if isinstance(snap, list):
        segs, traces, top = snap, [], None
        notes.append("bare list: only segments")
    else:
        segs, traces, top = snap.get("segments", []), snap.get("device_traces", []), snap
    blocks = [b for s in segs for b in s.get("blocks", [])]
    if blocks:
        if any("history" in b for b in blocks) or not all("address" in b for b in blocks):
            at_most("2.0", "blocks without address (history lists): 2.0")
        else:
            at_least_("2.1", "blocks with address and frames: 2.1 or later")
    for s in segs:
        keys = list(s.keys())
        if "segment_pool_id" in keys and "segment_type" in keys and \
                keys.index("segment_pool_id") < keys.index("segment_type"):
            notes.append("segment_pool_id before segment_type: torch_npu, not PyTorch CUDA")
            break
    entries = [e for t in traces for e in t]
    if entries:
        def all_have(k):
            return all(k in e for e in entries)
        if all_have("time_us"):
            at_least_("2.2", "time_us on trace entries: 2.2 or later")
        else:
            at_most("2.1", "no time_us: 2.1 or earlier")
        if all_have("compile_context"):
            at_least_("2.8", "compile_context: 2.8 or later")
        else:
            at_most("2.7", "no compile_context: 2.7 or earlier")
        if all_have("user_metadata"):
            at_least_("2.10", "user_metadata: 2.10 or later")
        else:
            at_most("2.9", "no user_metadata: 2.9 or earlier")
        if all_have("pool_id"):
            at_least_("2.12", "pool_id on trace entries: 2.12 or later")
        else:
            at_most("2.11", "no pool_id: 2.11 or earlier")
        actions = {e.get("action") for e in entries}
        if "annotate" in actions:
            at_least_("2.14", "annotate action: 2.14 or later")
        if any("internal_metadata" in e for e in entries):
            at_least_("2.15", "internal_metadata: 2.15 or later")
        if "user_defined" in actions:
            notes.append("user_defined action: a 2.5 development build (mid-2024 nightly)")
        if actions & {"workspace_snapshot"}:
            notes.append("workspace_snapshot action: torch_npu")
    if top is not None:
        if "allocator_settings" in top:
            at_least_("2.3", "allocator_settings: 2.3 or later")
            if "graph_capture_record_stream_reuse" in top["allocator_settings"]:
                at_least_("2.9", "graph_capture_record_stream_reuse setting: 2.9 or later")
            else:
                at_most("2.8", "settings without graph_capture_record_stream_reuse: 2.8 or earlier")
        else:
            at_most("2.2", "no allocator_settings: 2.2 or earlier")
        if "external_annotations" in top:
            at_least_("2.5", "external_annotations: 2.5 or later")
        else:
            at_most("2.4", "no external_annotations: 2.4 or earlier")
        if "host_segments" in top or "host_traces" in top:
            at_least_("2.14", "host_segments/host_traces: 2.14 or later")
    if lo > hi:
        notes.append("fields contradict each other: not a PyTorch CUDA snapshot of one release")
        return ORDER[lo], ORDER[hi], notes
    return ORDER[lo], ORDER[hi], notes


# ---------------------------------------------------------------------------------------------
# Expectations, computed from the objects written.

KNOWN_ACTIONS = ["alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
                 "segment_map", "segment_unmap", "snapshot", "oom", "annotate", "user_defined"]


def expectations(snap):
    segs = snap if isinstance(snap, list) else snap.get("segments", [])
    traces = [] if isinstance(snap, list) else snap.get("device_traces", [])
    n_events = {}
    for dev, t in enumerate(traces):
        if t:
            c = {}
            for e in t:
                c[e["action"]] = c.get(e["action"], 0) + 1
            n_events[str(dev)] = dict(sorted(c.items()))
    segs_by_dev, reserved, allocated, active, requested, states = {}, {}, {}, {}, {}, {}
    for s in segs:
        dev = str(s.get("device", 0))
        segs_by_dev[dev] = segs_by_dev.get(dev, 0) + 1
        reserved[dev] = reserved.get(dev, 0) + s["total_size"]
        allocated[dev] = allocated.get(dev, 0) + s["allocated_size"]
        active[dev] = active.get(dev, 0) + s["active_size"]
        requested[dev] = requested.get(dev, 0) + s.get("requested_size", 0)
        for b in s["blocks"]:
            states[b["state"]] = states.get(b["state"], 0) + 1
    lo, hi, notes = infer_version(snap)
    x = {
        "top": "list" if isinstance(snap, list) else list(snap.keys()),
        "device_lists": len(traces),
        "devices_with_events": [int(d) for d in n_events],
        "n_events": n_events,
        "n_events_total": sum(sum(c.values()) for c in n_events.values()),
        "unknown_actions": sorted({a for c in n_events.values() for a in c} - set(KNOWN_ACTIONS)),
        "n_segments": len(segs),
        "segments_by_device": segs_by_dev,
        "reserved_bytes": reserved,
        "allocated_bytes": allocated,
        "active_bytes": active,
        "requested_bytes": requested,
        "blocks_by_state": dict(sorted(states.items())),
        "version_min": lo,
        "version_max": hi,
        "version_notes": notes,
    }
    if not isinstance(snap, list):
        if "external_annotations" in snap:
            x["external_annotations"] = len(snap["external_annotations"])
        if "host_segments" in snap:
            x["host_segments"] = len(snap["host_segments"])
            x["host_reserved_bytes"] = sum(s["total_size"] for s in snap["host_segments"])
        if "host_traces" in snap:
            c = {}
            for e in snap["host_traces"]:
                c[e["action"]] = c.get(e["action"], 0) + 1
            x["host_events"] = dict(sorted(c.items()))
    return x


# ---------------------------------------------------------------------------------------------
# The fixtures.

CASES = []   # (name, snapshot object, events, segments, layout text, what it tests)


def case(name, snap, events, segments, layout, tests):
    if events is not None:
        check_consistent(name, events, segments)
    CASES.append((name, snap, layout, tests))


# 2.0: blocks carry history, no address/frames; segments without pool/expandable/frames.
ev = story_events()
case("v2_0_history_blocks", snapshot("2.0", ev, story_segments()), ev, story_segments(),
     "2.0 (`_record_memory_history(True, trace_alloc_max_entries=N, trace_alloc_record_context=True)`)",
     "blocks with `history` ([{addr, real_size, frames}]) and no `address`; frame dicts ordered "
     "filename, name, line; trace entries with `frames` first; no time_us, settings, pools")

# 2.1: blocks with address/frames, segments with segment_pool_id/is_expandable/frames, no time.
case("v2_1_no_time", snapshot("2.1", ev, story_segments()), ev, story_segments(),
     "2.1", "the 2.1 layout: no `time_us`, no `allocator_settings`; `frames` after `blocks` on "
     "segments that have a stack")

# 2.2: time_us; the OOM variant of the story.
ev_oom = story_events(oom=True)
case("v2_2_time_oom", snapshot("2.2", ev_oom, story_segments()), ev_oom, story_segments(),
     "2.2", "`time_us` on entries; an `oom` entry (`device_free` instead of `addr`) right after "
     "the retry's segment_free; device size = reserved after the flush + device_free")

# 2.3/2.4: allocator_settings.
ev = story_events()
case("v2_3_settings", snapshot("2.3", ev, story_segments(), settings_conf="max_split_size_mb:512",
                               max_split=512 * MiB), ev, story_segments(),
     "2.3 and 2.4", "`allocator_settings` with the first eight keys (no "
     "`graph_capture_record_stream_reuse`); the config string and the parsed `max_split_size` "
     "(512 MiB, larger than every block, so the story is unchanged)")

# mid-2024 nightlies: user_defined entries in device_traces.
ev_ud = story_events()
ud = [Ev("user_defined", 0, 0, [pyframe("START", "ProfilerStep#0", 0)]),
      Ev("user_defined", 0, 0, [pyframe("START", "## forward ##", 0)]),
      Ev("user_defined", 0, 0, [pyframe("END", "## forward ##", 0)]),
      Ev("user_defined", 0, 0, [pyframe("END", "ProfilerStep#0", 0)])]
ev_ud = [ud[0], ud[1]] + ev_ud[:7] + [ud[2]] + ev_ud[7:] + [ud[3]]
case("nightly_2024_user_defined", snapshot("2.3", ev_ud, story_segments()), ev_ud,
     story_segments(), "development builds between 2.4 and 2.5 (mid-2024)",
     "`user_defined` entries (addr 0, size 0, the stage in frames[0].name and the "
     "record_function name in frames[0].filename) among allocator events; they change nothing")

# 2.5-2.7: external_annotations; also the C++ stacks fixture below.
ev = story_events()
anns = [annotation("START", "ProfilerStep#1", T0 - 10), annotation("START", "## forward ##", T0 - 5),
        annotation("END", "## forward ##", T0 + 37 * 7), annotation("END", "ProfilerStep#1", T0 + 600)]
case("v2_5_external_annotations", snapshot("2.5", ev, story_segments(), annotations=anns), ev,
     story_segments(), "2.5, 2.6, 2.7",
     "`external_annotations` ({stage, name, device, time_us}) at the top level; trace entries "
     "without compile_context")

# 2.8: compile_context on every entry ("N/A" unless compile_context=True found a region).
ev = story_events()
for i in (3, 4, 6):
    ev[i].compile_context = "Torch-Compiled Region: 0/0"
case("v2_8_compile_context", snapshot("2.8", ev, story_segments()), ev, story_segments(), "2.8",
     "`compile_context` on every entry; settings still without graph_capture_record_stream_reuse")

# 2.10/2.11: user_metadata, graph_capture_record_stream_reuse, a snapshot entry, fx frames.
ev = story_events(meta={3: "step=0", 4: "step=0", 6: "step=0", 7: "step=1", 8: "step=1"})
active_at_7 = A_BLK + B_BLK + C_BLK + D_SEG
ev.insert(7, Ev("snapshot", 0, active_at_7, None))
FX = {"name": "forward", "filename": "/tmp/torchinductor/fx_generated_3a4b5c6d7e8f9a0.py",
      "line": 12, "fx_node_op": "call_function", "fx_node_name": "addmm",
      "fx_original_trace": "  File \"/work/model.py\", line 42, in forward\n    y = self.lin(x)\n"}
ev[6].stack = [FX, F_TRAIN, F_MAIN]
case("v2_10_user_metadata", snapshot("2.10", ev, story_segments()), ev, story_segments(),
     "2.10 and 2.11", "`user_metadata` (a string, \"\" when unset) after compile_context; "
     "`graph_capture_record_stream_reuse` in the settings; a `snapshot` entry (addr 0, size = "
     "active bytes, no frames); one frame with `fx_*` keys (augment_with_fx_traces)")

# 2.11: device_traces empty (a snapshot taken with include_traces=False).
ev = story_events()
snap = snapshot("2.10", [], story_segments(), ndev=0)
case("v2_11_no_traces", snap, None, story_segments(), "2.11 or later, include_traces=False",
     "`device_traces` is an empty list (not one empty list per device) and no annotations: "
     "segments only, in a dict")

# History never enabled: one empty list per device, segments on two devices.
_, segs1 = device1_story()
segs = story_segments() + segs1
for s in segs:
    s.stack = None
    for b in s.blocks:
        b.stack = None
case("no_history_two_devices", snapshot("2.10", [], segs, ndev=2), None, segs,
     "any release from 2.10 (the keys) with history off",
     "`device_traces` = [[], []]; segments on devices 0 and 1 with `frames` = [] before "
     "`blocks`; no event on any device")

# 2.12/2.13: pool_id on entries; a MemPool segment.
ev = story_events()
POOL = (0, 1)
ev += [Ev("segment_alloc", S4, 2 * MiB, STACK_ALLOC, pool=POOL),
       Ev("alloc", S4, 4096, STACK_ALLOC, pool=POOL),
       Ev("free_requested", S4, 4096, STACK_FREE, pool=POOL),
       Ev("free_completed", S4, 4096, STACK_FREE, pool=POOL)]
segs = story_segments() + [Seg(S4, False, [Blk(2 * MiB, 4096, "inactive")], STACK_ALLOC,
                               pool=POOL)]
case("v2_12_pool_id", snapshot("2.12", ev, segs), ev, segs, "2.12 and 2.13",
     "`pool_id` (a 2-tuple) on every entry; a MemPool (0, 1) whose 2 MiB segment stays "
     "reserved after its only block is freed (the block keeps its stale requested_size)")

# 2.14: annotate entries, host_segments/host_traces.
ev = story_events()
ev.insert(8, Ev("annotate", S2 + B_BLK, C_REQ, STACK_ANN, user_metadata="saved_for_backward"))
ev.append(Ev("annotate", S2, E_REQ, STACK_ANN, user_metadata="optimizer_state"))
host_traces = [
    entry(Ev("segment_alloc", H1, 1 * MiB, STACK_ALLOC), "2.14", T0 + 5),
    entry(Ev("alloc", H1, 1000000, STACK_ALLOC), "2.14", T0 + 6),
    entry(Ev("free_requested", H1, 1000000, STACK_FREE), "2.14", T0 + 400),
    entry(Ev("free_completed", H1, 1000000, STACK_FREE), "2.14", T0 + 401),
]
host_segments = [{"address": H1, "total_size": 1 * MiB, "allocated_size": 0, "active_size": 0,
                  "requested_size": 0, "stream": 0, "frames": [],
                  "blocks": [{"address": H1, "size": 1 * MiB, "requested_size": 1000000,
                              "state": "inactive", "frames": []}]}]
case("v2_14_annotate_host", snapshot("2.14", ev, story_segments(),
                                     extra_top={"host_segments": host_segments,
                                                "host_traces": host_traces}),
     ev, story_segments(), "2.14 (record_pinned_host_memory=True, _annotate_memory)",
     "`annotate` entries (addr = a live block's base, user_metadata = the note; they change "
     "nothing); top-level `host_segments` and `host_traces` (pinned host memory, not device "
     "memory: their shape here is an assumption, see the doc)")

# 2.15/main: internal_metadata (only when set), JSON user_metadata, a mallocWithAddress pair.
ev = story_events(meta={3: '{"phase":"fwd","step":0}', 4: '{"phase":"fwd","step":0}'})
tail = S2 + B_BLK + C_BLK
ev += [Ev("alloc", tail, 2 * MiB, STACK_ALLOC, internal_metadata="mallocWithAddress"),
       Ev("alloc", tail + 2 * MiB, C_REQ, STACK_ALLOC),
       Ev("free_requested", tail, 2 * MiB, STACK_ALLOC, internal_metadata="mallocWithAddress"),
       Ev("free_completed", tail, 2 * MiB, STACK_ALLOC, internal_metadata="mallocWithAddress")]
segs = story_segments()
segs[0].blocks = segs[0].blocks[:2] + [Blk(2 * MiB, 2 * MiB, "inactive", STACK_ALLOC),
                                       Blk(C_BLK, C_REQ, "active_allocated", STACK_ALLOC),
                                       Blk(S2_TAIL - 2 * MiB - C_BLK, 0, "inactive")]
case("v2_15_internal_metadata", snapshot("2.15", ev, segs), ev, segs, "2.15 and main",
     "`internal_metadata` only on the entries that carry one (an allocation at a chosen "
     "address: the prefix block's alloc/free pair); user_metadata holding JSON text")

# A free pending on another stream's work: active_pending_free at the end.
P_REQ, Q_REQ = 512000, 100000
ev = [Ev("segment_alloc", S1, 2 * MiB, STACK_ALLOC),
      Ev("alloc", S1, P_REQ, STACK_ALLOC),
      Ev("alloc", S1 + P_REQ, Q_REQ, STACK_ALLOC),
      Ev("free_requested", S1, P_REQ, STACK_FREE)]
segs = [Seg(S1, False, [Blk(P_REQ, P_REQ, "active_pending_free", STACK_ALLOC),
                        Blk(round_size(Q_REQ), Q_REQ, "active_allocated", STACK_ALLOC),
                        Blk(2 * MiB - P_REQ - round_size(Q_REQ), 0, "inactive")], STACK_ALLOC)]
case("active_pending_free", snapshot("2.10", ev, segs), ev, segs, "2.10 and 2.11",
     "a block freed after record_stream: `free_requested` with no `free_completed`, state "
     "`active_pending_free`; it counts in active_size and requested_size, not allocated_size")

# Unknown keys and actions a reader must skip (main adds keys before readers know them).
ev = story_events()
ev.insert(12, Ev("future_action", S2, 123, STACK_ALLOC))
snap = snapshot("2.12", ev, story_segments(),
                extra_top={"trace_alloc_max_entries": [1000000],
                           "trace_alloc_overflowed": [False],
                           "future_top_key": {"nested": [1, 2.5, None, True, "x"]}})
snap["segments"][0]["future_segment_key"] = "x"
snap["segments"][0]["blocks"][0]["future_block_key"] = [1, 2]
for t in snap["device_traces"]:
    for e in t:
        if "frames" in e:
            e["forward_frames"] = ["File \"/work/model.py\", line 42, in forward"]
        e["future_entry_key"] = None
case("unknown_keys_and_actions", snap, None, story_segments(),
     "2.12 layout plus keys and an action no release writes",
     "unknown top-level, segment, block and entry keys (including `forward_frames`, a list of "
     "strings, and None values), and one entry with action `future_action`: a reader skips "
     "them and counts the rest")
check_consistent("unknown_keys_and_actions", [e for e in ev if e.action != "future_action"],
                 story_segments())

# stacks="all": deep mixed C++/Python stacks, long symbol names, two devices.
CPP = [pyframe("torch::unwind::unwind()", "??", 0),
       pyframe("torch::CapturedTraceback::gather(bool, bool, bool)", "??", 0),
       pyframe("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp", 0),
       pyframe("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc("
               "signed char, unsigned long, CUstream_st*)", "CUDACachingAllocator.cpp", 0),
       pyframe("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc("
               "void**, signed char, unsigned long, CUstream_st*)", "", 0)]
LONG = "c10::impl::make_boxed_from_unboxed_functor<c10::impl::detail::WrapFunctionIntoFunctor_<" \
       "c10::CompileTimeFunctionPointer<at::Tensor (c10::ArrayRef<c10::SymInt>, c10::ArrayRef<" \
       "c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<" \
       "c10::Device>, std::optional<bool>), &at::(anonymous namespace)::(anonymous namespace)::" \
       "wrapper_CUDA__empty_strided>, at::Tensor, c10::guts::typelist::typelist<c10::ArrayRef<" \
       "c10::SymInt>, c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<" \
       "c10::Layout>, std::optional<c10::Device>, std::optional<bool> > >, false>::call(" \
       "c10::OperatorKernel*, c10::OperatorHandle const&, c10::DispatchKeySet, std::vector<" \
       "c10::IValue, std::allocator<c10::IValue> >*)"
MID = [pyframe(f"at::_ops::op_{i}::call(at::Tensor const&)", "??", 0) if i % 3
       else pyframe(LONG, "", 0) for i in range(240)]
PYTAIL = [pyframe("_PyEval_EvalFrameDefault", "??", 0), F_MODEL,
          pyframe("_call_impl", "/usr/lib/python3/torch/nn/modules/module.py", 1750), F_TRAIN,
          F_MAIN, pyframe("Py_RunMain", "??", 0), pyframe("__libc_start_main", "", 0),
          pyframe("_start", "??", 0)]
DEEP = CPP + MID + PYTAIL          # 253 frames, one shared list
DEEP_FREE = CPP[:2] + MID[:100] + PYTAIL
ev = story_events()
for e in ev:
    e.stack = DEEP_FREE if e.action.startswith("free") else DEEP
ev1, segs1 = device1_story()
for e in ev1:
    e.stack = DEEP
segs = story_segments() + segs1
for s in segs:
    s.stack = DEEP
    for b in s.blocks:
        if b.stack is not None:
            b.stack = DEEP
allev = ev + ev1
case("cpp_frames_deep", snapshot("2.5", allev, segs, ndev=2), allev, segs,
     "2.5, 2.6, 2.7 with stacks=\"all\"",
     "253-frame stacks: C++ frames with filename \"??\" or \"\" or a bare file name and line 0, "
     "symbol names over 255 bytes (BINUNICODE), Python frames with lines; one shared frame "
     "list (memo gets); events on devices 0 and 1")

# A bare list of segments (torch.cuda.memory_snapshot() pickled by hand).
segs = story_segments()
case("bare_list", [segment_dict(s, "2.10") for s in segs], None, segs,
     "a list, as torch.cuda.memory_snapshot() returns it (any release)",
     "no dict, no trace: segments only")

# torch_npu: expandable segments mapped page by page, NPU key order, 8 device lists.
N_B, N_C, N_A = 3000000, 4194304, 1000000
ev = [Ev("segment_map", L_NPU, 20 * MiB, STACK_ALLOC, stream=STREAM_NPU),
      Ev("alloc", L_NPU, N_B, STACK_ALLOC, stream=STREAM_NPU),
      Ev("alloc", L_NPU + round_size(N_B), N_C, STACK_ALLOC, stream=STREAM_NPU),
      Ev("segment_map", SM_NPU, 2 * MiB, STACK_ALLOC, stream=STREAM_NPU),
      Ev("alloc", SM_NPU, N_A, STACK_ALLOC, stream=STREAM_NPU),
      Ev("free_requested", L_NPU, N_B, STACK_FREE, stream=STREAM_NPU),
      Ev("free_completed", L_NPU, N_B, STACK_FREE, stream=STREAM_NPU),
      Ev("free_requested", SM_NPU, N_A, STACK_FREE, stream=STREAM_NPU),
      Ev("free_completed", SM_NPU, N_A, STACK_FREE, stream=STREAM_NPU),
      Ev("segment_unmap", SM_NPU, 2 * MiB, STACK_CACHE, stream=STREAM_NPU)]
segs = [Seg(L_NPU, True, [Blk(round_size(N_B), N_B, "inactive", STACK_ALLOC),
                          Blk(round_size(N_C), N_C, "active_allocated", STACK_ALLOC),
                          Blk(20 * MiB - round_size(N_B) - round_size(N_C), 0, "inactive")],
            None, stream=STREAM_NPU, expandable=True)]
case("npu_expandable", snapshot("2.1", ev, segs, ndev=8, npu=True), ev, segs,
     "torch_npu 2.x (Ascend) with expandable segments",
     "`segment_pool_id` before `segment_type`, no time_us/settings/annotations although blocks "
     "have addresses, a non-zero stream handle, 8 device lists, `segment_map`/`segment_unmap` "
     "and no segment_alloc")


# ---------------------------------------------------------------------------------------------
# Write.

def main():
    os.makedirs(OUT, exist_ok=True)
    expected = {}
    for name, snap, layout, tests in CASES:
        path = os.path.join(OUT, name + ".pickle")
        with open(path, "wb") as f:
            pickle.dump(snap, f, protocol=PROTOCOL)
        with open(path, "rb") as f:
            assert pickle.load(f) == snap
        x = expectations(snap)
        x["layout"] = layout
        x["tests"] = tests
        expected[name] = x
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    write_readme(expected)
    print(f"wrote {len(CASES)} snapshots, expected.json and README.md to {OUT}")


def fmt_events(x):
    if not x["n_events"]:
        return "none"
    return "; ".join(f"dev {d}: " + ", ".join(f"{a} {n}" for a, n in c.items())
                     for d, c in x["n_events"].items())


def fmt_bytes(m):
    return ", ".join(f"dev {d}: {v}" for d, v in m.items()) or "0"


def write_readme(expected):
    lines = [
        "# Synthetic snapshots, one per snapshot layout",
        "",
        "Made by `scripts/gen_version_cases.py` (run it from the repository root to rewrite this",
        "folder). They are synthetic: plain Python dicts and lists written with `pickle.dump(...,",
        f"protocol={PROTOCOL})`, shaped the way each release's snapshot code shapes them (key names,",
        "key order, types), as described in `docs/snapshot-versions.md`. No torch produced them and",
        "none holds data from a real run. Most files tell the same story on device 0, stream 0",
        "(default settings, history recorded with context=\"all\"):",
        "",
        "    segment_alloc S1 2 MiB; alloc A 1000000 (S1); segment_alloc S2 20 MiB; alloc B 3000000",
        "    (S2); alloc C 4 MiB (S2 + 3000320); segment_alloc S3 26 MiB; alloc D 25 MiB (S3, the",
        "    whole segment: a 1 MiB remainder is not split); free B; free A (S1 becomes one free",
        "    block); segment_free S1 (empty_cache, or the flush before an OOM); alloc E 2000000",
        "    (B's old block, whole: the 999936 left are not split).",
        "",
        "It ends with S2 = [E | C | 13776896 free] and S3 = [D]: 48234496 bytes reserved. Some",
        "files add to it (a MemPool, a second device, an annotation, an allocation at a chosen",
        "address) or tell their own (`active_pending_free`, `npu_expandable`), as the table says.",
        "In every file the trace and the final `segments` agree, which the script checks before",
        "writing. `expected.json` holds, per file, what a reader must get, computed by the script",
        "from the objects it wrote: events by device and action, segments per device, reserved,",
        "allocated, active and requested bytes, block states, and the version range the fields",
        "allow (`version_min`..`version_max`, from the decision list of the doc).",
        "",
        "| file | layout of | what it tests | events | segments | reserved bytes | version a reader can tell |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, x in expected.items():
        rng = x["version_min"] if x["version_min"] == x["version_max"] else \
            f"{x['version_min']} to {x['version_max']}"
        if x["version_max"] == "main" and x["version_min"] != "main":
            rng = f"{x['version_min']} or later"
        if any("torch_npu" in n for n in x["version_notes"]):
            rng = "torch_npu (fields alone: " + rng + ")"
        if any("user_defined" in n for n in x["version_notes"]):
            rng = "a 2.5 development build (fields alone: " + rng + ")"
        lines.append(f"| `{name}.pickle` | {x['layout']} | {x['tests']} | {fmt_events(x)} | "
                     f"{x['n_segments']} | {fmt_bytes(x['reserved_bytes'])} | {rng} |")
    lines += [
        "",
        "Notes:",
        "- `v2_14_annotate_host.pickle`: only the key names `host_segments` and `host_traces` are",
        "  confirmed; the dicts inside them follow the device layout as an assumption. A reader must",
        "  not count them as device memory or device events.",
        "- `unknown_keys_and_actions.pickle`: `expected.json` counts the `future_action` entry under",
        "  `unknown_actions`; a reader may skip it, but must not fail and must count the others.",
        "- `npu_expandable.pickle`: the fields alone look like 2.1; the segment key order",
        "  (`segment_pool_id` before `segment_type`) is what tells torch_npu apart.",
        "- `nightly_2024_user_defined.pickle`: the `user_defined` entries are not allocator events;",
        "  `expected.json` counts them under `n_events` like any action.",
        "",
    ]
    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
