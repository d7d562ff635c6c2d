# memsnap mcp as an agent's client drives it: a scripted session over standard input (JSON-RPC
# 2.0, one message a line), each tool's structured content equal to the command's --json, errors
# as tool results (isError) or protocol errors, render writing only where it is told, and a
# clean exit at the end of input.
s=testdata/snapshots/dynamic_oom.pickle
python3 - "$MEMSNAP" "$s" "$TMPDIR" <<'PY'
import json, os, subprocess, sys
memsnap, snap, tmp = sys.argv[1:4]
ddp0, ddp1 = "testdata/snapshots/multi_gpu/ddp_rank0.zst", "testdata/snapshots/multi_gpu/ddp_rank1.zst"
page = os.path.join(tmp, "page.html")
fifo = os.path.join(tmp, "fifo")
os.mkfifo(fifo)
two = "testdata/snapshots/devices/two_devices.pickle.zst"
gen = "testdata/snapshots/inference/gpt2_dynamic.pickle.zst"
calls = [
    ("info", {"path": snap}, ["info", "--json", snap]),
    ("stats", {"path": snap, "device": 0}, ["stats", "--json", "--device", "0", snap]),
    ("replay", {"path": snap, "limit": "12GiB"}, ["replay", "--json", "--limit", "12GiB", snap]),
    ("verify", {"path": snap}, ["verify", "--json", snap]),
    ("explain", {"path": snap, "jobs": 2}, ["explain", "--json", "--jobs", "2", snap]),
    ("check", {"path": snap, "max_peak_reserved": "10GiB", "allow_oom": True},
     ["check", "--json", "--max-peak-reserved", "10GiB", "--allow-oom", snap]),
    ("diff", {"path": ddp0, "other": ddp1}, ["diff", "--json", ddp0, ddp1]),
    # the moment after an allocation, and categories of one's own
    ("explain", {"path": gen, "at": "alloc:0x7fb75ffce200#2", "categories": {"cache": "cache_utils"}},
     ["explain", "--json", "--at", "alloc:0x7fb75ffce200#2", "--category", "cache=cache_utils", gen]),
]
msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": "p", "method": "ping"}]
for k, (name, args, _) in enumerate(calls):
    msgs.append({"jsonrpc": "2.0", "id": 10 + k, "method": "tools/call",
                 "params": {"name": name, "arguments": args}})
msgs += [{"jsonrpc": "2.0", "id": 30, "method": "tools/call",
          "params": {"name": "render", "arguments": {"path": snap, "output": page}}},
         {"jsonrpc": "2.0", "id": 31, "method": "tools/call",
          "params": {"name": "replay", "arguments": {"path": "no/such/file.pickle"}}},
         {"jsonrpc": "2.0", "id": 32, "method": "tools/call",
          "params": {"name": "replay", "arguments": {"path": snap, "top": 3}}},
         {"jsonrpc": "2.0", "id": 33, "method": "tools/call",
          "params": {"name": "render", "arguments": {"path": snap, "output": snap}}},
         {"jsonrpc": "2.0", "id": 34, "method": "tools/call", "params": {"name": "nope"}},
         {"jsonrpc": "2.0", "id": 35, "method": "resources/list"},
         {"jsonrpc": "2.0", "id": 36, "method": "tools/call",
          "params": {"name": "info", "arguments": {"path": fifo}}},
         {"jsonrpc": "2.0", "id": 37, "method": "tools/call",
          "params": {"name": "stats", "arguments": {"path": two}}},
         {"jsonrpc": "2.0", "id": 9007199254740991, "method": "ping"},
         {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}]
lines = [json.dumps(m) for m in msgs] + ["not json", "[1, 2]", '{"jsonrpc":"2.0","id":40,'
                                          '"method":"ping"}{"jsonrpc":"2.0","id":41,"method":"ping"}',
                                          "   "]
before = os.stat(snap).st_mtime_ns
p = subprocess.run([memsnap, "mcp"], input="\n".join(lines) + "\n", capture_output=True,
                   text=True, timeout=600)
print("exit", p.returncode, "stderr", repr(p.stderr))
out = [json.loads(l) for l in p.stdout.splitlines()]
by = {m.get("id"): m for m in out}
init = by[1]["result"]
print("initialize:", init["protocolVersion"], init["serverInfo"]["name"],
      sorted(init["capabilities"]))
tools = by[2]["result"]["tools"]
print("tools:", [t["name"] for t in tools])
print("every tool has an input schema requiring path:",
      all(t["inputSchema"]["type"] == "object" and "path" in t["inputSchema"]["required"]
          for t in tools))
print("ping:", by["p"]["result"])
for k, (name, args, cli) in enumerate(calls):
    r = by[10 + k]["result"]
    want = json.loads(subprocess.run([memsnap, "-q"] + cli, capture_output=True,
                                     text=True).stdout)
    print(name, "structured content is the command's --json:", r["structuredContent"] == want,
          "text too:", json.loads(r["content"][0]["text"]) == want, "isError:", r["isError"])
r = by[30]["result"]
print("render:", r["isError"], r["structuredContent"]["path"] == os.path.realpath(page),
      r["structuredContent"]["bytes"] == os.path.getsize(page),
      json.loads(r["content"][0]["text"]) == r["structuredContent"])
print("a FIFO:", by[36]["result"]["isError"], by[36]["result"]["content"][0]["text"].replace(tmp, "TMP"))
want = json.loads(subprocess.run([memsnap, "-q", "stats", "--json", two], capture_output=True,
                                 text=True).stdout)
print("stats of two devices: rows", by[37]["result"]["structuredContent"] == {"rows": want})
print("an integer id below 2^53 given back exactly:", 9007199254740991 in by)
for i in (31, 32, 33):
    r = by[i]["result"]
    print("error", i, r["isError"], r["content"][0]["text"].replace(snap, "SNAP"))
print("unknown tool:", by[34]["error"])
print("unknown method:", by[35]["error"])
print("the rest:", [m["error"] for m in out if m.get("id") is None])
print("input unchanged:", os.stat(snap).st_mtime_ns == before)
PY
