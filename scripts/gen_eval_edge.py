#!/usr/bin/env python3
"""Writes testdata/snapshots/edge/eval_*.json: small training jobs in PyTorch's snapshot layout
(JSON form), made by this script, not by PyTorch, for explain's evaluation loops. Two parameters
are made by torch.nn code; a training iteration makes an input outside any module, activations
under Module._call_impl, gradients with no Python frame (the autograd engine's thread), frees the
activations, then runs an AdamW step (annotated Optimizer.step) that keeps its state; an
evaluation forward makes a token outside any module and a temporary under a module's call.

  eval_two_calls.json        4 iterations, each calling three top-level modules one after
                             another (model, discriminator, loss) with allocations outside any
                             between them: no evaluation loop (the first calls' activations are
                             kept for the backward)
  eval_lightning.json        Lightning's layout, each whole iteration inside Optimizer.step's
                             closure: 2 iterations, an evaluation of 3 forwards, 1 iteration, one
                             of 2, 1 iteration: loops of 3 and 2 forwards
  eval_kept_outputs.json     2 iterations, a validation of 5 batches keeping each batch's logits
                             (made in the module's call) for a metric, then 1 iteration: a loop of
                             5 forwards, and no KV cache
  eval_then_oom.json         2 iterations, an evaluation of 3 forwards, then an iteration that
                             calls three modules and runs out of memory in the third, before its
                             backward: a loop of 3 forwards (the dying iteration's calls hold
                             their activations at the OOM: no evaluation)
  eval_cache_across.json     2 iterations, an evaluation of 4 forwards whose first makes a cache
                             (in cache_utils.py) kept past the loop, 1 iteration, an evaluation
                             of 4 whose first frees it and makes another, 1 iteration: each loop's
                             request holds its own cache, 256 KiB, to the loop's end

usage: python3 scripts/gen_eval_edge.py [OUT_DIR]
"""
import json
import os
import sys

SITE = "/usr/lib/python3.12/site-packages/torch"
NN = [{"filename": SITE + "/nn/modules/linear.py", "line": 1, "name": "__init__"},
      {"filename": "/home/u/train.py", "line": 3, "name": "main"}]
OUTSIDE = [{"filename": "/home/u/train.py", "line": 10, "name": "main"}]
OPT = [{"filename": SITE + "/optim/adamw.py", "line": 1, "name": "step"},
       {"filename": "/home/u/train.py", "line": 20, "name": "main"}]
P = 1 << 20


def call(fn="forward", file="/home/u/model.py"):
    return [{"filename": file, "line": 5, "name": fn},
            {"filename": SITE + "/nn/modules/module.py", "line": 1750, "name": "_call_impl"},
            {"filename": "/home/u/train.py", "line": 12, "name": "main"}]


class Job:
    def __init__(self):
        self.events, self.anns, self.t, self.addr = [], [], 1_000_000, 0x7f0000000000
        self.state, self.kept = [], {}
        self.params = [self.alloc(P, NN) for _ in range(2)]

    def entry(self, action, addr, size, frames):
        self.t += 10
        self.events.append({"action": action, "addr": addr, "size": size, "stream": 0,
                            "time_us": self.t, "frames": frames})

    def alloc(self, size, frames):
        self.addr += 0x100000
        self.entry("alloc", self.addr, size, frames)
        return (self.addr, size, frames)

    def free(self, b):
        self.entry("free_requested", *b)
        self.entry("free_completed", *b)

    def ann(self, stage):
        self.t += 5
        self.anns.append({"device": 0, "stage": stage, "name": "Optimizer.step#AdamW.step",
                          "time_us": self.t})

    def step(self):
        if not self.state:
            self.state.extend(self.alloc(P, OPT) for _ in range(4))
        self.free(self.alloc(P, OPT))

    def train(self, calls=1, lightning=False):
        if lightning:
            self.ann("START")
        x = self.alloc(4096, OUTSIDE)
        acts, outside = [self.alloc(64 << 10, call()) for _ in range(3)], []
        for k in range(1, calls):  # another top-level module after an allocation outside any
            outside.append(self.alloc(4096, OUTSIDE))
            acts += [self.alloc(64 << 10, call("forward", f"/home/u/module{k}.py"))]
        grads = [self.alloc(P, []) for _ in range(2)]
        for a in acts:
            self.free(a)
        if not lightning:
            self.ann("START")
        self.step()
        self.ann("END")
        for b in grads + [x] + outside:
            self.free(b)

    def dies(self, calls):
        """An iteration that runs out of memory in its last call's forward."""
        self.alloc(4096, OUTSIDE)
        for k in range(calls):
            self.alloc(64 << 10, call("forward", f"/home/u/module{k}.py"))
            if k + 1 < calls:
                self.alloc(4096, OUTSIDE)
        self.t += 10
        self.events.append({"action": "oom", "addr": 0, "size": 1 << 40, "stream": 0,
                            "time_us": self.t, "device_free": 1 << 30,
                            "frames": call("forward", f"/home/u/module{calls - 1}.py")})

    def evaluate(self, n, keep_outputs=False, cache=None, free_cache=None):
        outs = []
        for i in range(n):
            tok = self.alloc(512, OUTSIDE)
            tmp = self.alloc(8192, call())
            if keep_outputs:
                outs.append(self.alloc(32768, call()))
            if i == 0 and free_cache:
                self.free(self.kept.pop(free_cache))
            if i == 0 and cache:
                self.kept[cache] = self.alloc(256 << 10, call("update", "/home/u/cache_utils.py"))
            self.free(tmp)
            self.free(tok)
        if outs:
            metric = self.alloc(len(outs) * 32768, OUTSIDE)
            for o in outs:
                self.free(o)
            self.free(metric)

    def write(self, path):
        with open(path, "w") as f:
            json.dump({"segments": [], "device_traces": [self.events],
                       "external_annotations": self.anns}, f)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/snapshots/edge"
    j = Job()
    for _ in range(4):
        j.train(calls=3)
    j.write(os.path.join(out, "eval_two_calls.json"))
    j = Job()
    for n in (None, None, 3, None, 2, None):
        if n:
            j.evaluate(n)
        else:
            j.train(lightning=True)
    j.write(os.path.join(out, "eval_lightning.json"))
    j = Job()
    j.train(), j.train(), j.evaluate(5, keep_outputs=True), j.train()
    j.write(os.path.join(out, "eval_kept_outputs.json"))
    j = Job()
    j.train(), j.train(), j.evaluate(3), j.dies(3)
    j.write(os.path.join(out, "eval_then_oom.json"))
    j = Job()
    j.train(), j.train(), j.evaluate(4, cache="c1"), j.train()
    j.evaluate(4, free_cache="c1", cache="c2"), j.train()
    j.write(os.path.join(out, "eval_cache_across.json"))


if __name__ == "__main__":
    main()
