"""Re-create tcdoctor's cold child in-process (PhaseRunner's own phase methods, read-only import), with
each candidate cause switchable, then time several compiled callables interleaved in the same process.

Modes (--mode):
  minimal   no tcdoctor at all: torch.compile(model), first call, then the timing below
  child     PhaseRunner: environment, eager, graph_breaks, compile (as the cold child), then the timing below
Switches for `child`: --skip graph_breaks,eager  (phases left out)
Timing (--budget s, round-robin over the callables, order rotating each round, medians of per-call means):
  eager            the eager model under a held no_grad
  tcd              tcdoctor's own path: runner.compiled_fn (fresh deep copy B, no_grad entered per call)
  tcd_held         the same compiled copy B, no_grad held across the batch
  orig_compiled    torch.compile(the object build() returned), no_grad held (the minimal script's callable)
Prints one JSON line. Usage: python benchmarks/child_replica.py benchmarks/resnet18.py:build --mode child
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


FAULTS: dict = {}


def batch(fn, k: int, name: str | None = None) -> float:
    import contextlib

    import torch

    # a callable named *_held runs its whole batch under one no_grad (as a hand-written loop does)
    held = torch.no_grad() if name and name.endswith("_held") else contextlib.nullcontext()
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    with held:
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        dt = (time.perf_counter() - t0) / k
    if name:
        calls, faults = FAULTS.get(name, (0, 0))
        FAULTS[name] = (calls + k, faults + resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    return dt


def round_robin(fns: dict, budget_s: float, target_s: float = 0.002, min_rounds: int = 10) -> dict:
    for f in fns.values():
        for _ in range(3):
            f()
    est = min(batch(f, 1) for f in fns.values())
    k = max(1, math.ceil(target_s / est))
    names = list(fns)
    out = {n: [] for n in names}
    deadline = time.perf_counter() + budget_s
    r = 0
    while r < min_rounds or time.perf_counter() < deadline:
        order = names[r % len(names) :] + names[: r % len(names)]
        if (r // len(names)) % 2:
            order.reverse()
        for n in order:
            out[n].append(batch(fns[n], k, n))
        r += 1
    return {n: statistics.median(v) for n, v in out.items()} | {"rounds": r, "k": k}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--mode", choices=["minimal", "child"], default="child")
    ap.add_argument("--skip", default="")
    ap.add_argument("--budget", type=float, default=5.0)
    ap.add_argument("--callables", default="eager,tcd,tcd_held,orig_compiled")
    ap.add_argument(
        "--no-outer",
        action="store_true",
        help="no no_grad around the whole timing (as in tcdoctor)",
    )
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    from tcdoctor.target import load as tgt

    info: dict = {"mode": a.mode, "skip": a.skip}
    workload, rebuild = tgt.load_with_rebuild(a.target)
    model, args, kw = workload.model, tuple(workload.call_args.args), workload.call_args.kwargs
    fns: dict = {}
    ng = torch.no_grad

    if a.mode == "minimal":
        cm = torch.compile(model)
        with ng():
            t0 = time.perf_counter()
            cm(*args, **kw)
            info["first_call_s"] = time.perf_counter() - t0
        fns = {"eager": lambda: model(*args, **kw), "orig_compiled": lambda: cm(*args, **kw)}
        wanted = [c for c in a.callables.split(",") if c in fns]
    else:
        from tcdoctor.options import Options
        from tcdoctor.run.runner import PhaseRunner

        skip = set(filter(None, a.skip.split(",")))
        runner = PhaseRunner(workload, Options(), sink=lambda ev: None, rebuild=rebuild)
        runner.measure("environment")
        if "eager" not in skip:
            runner.measure("eager")
        else:
            runner.eager_subject = runner.fresh()
        if "graph_breaks" not in skip:
            runner.measure("graph_breaks")
        t0 = time.perf_counter()
        runner.measure("compile")
        info["first_call_s"] = time.perf_counter() - t0
        copy_b = runner.compiled
        cm = torch.compile(model)
        fns = {
            "eager": lambda: model(*args, **kw),
            "tcd": runner.compiled_fn,
            "tcd_held": lambda: copy_b(*args, **kw),
            "orig_compiled": lambda: cm(*args, **kw),
            "tcd_eager": runner.eager_fn,
            # copy B called directly with the runner's (deep-copied) inputs: no calls.call wrapper
            "tcd_inputs": lambda: runner.workload.call_args.apply(copy_b),
            "orig_compiled_held": lambda: cm(*args, **kw),
            # the copy that made the first compiled call (the one Dynamo's cache entry was built on)
            "seq_held": lambda: runner.sequence[0].workload.call_args.apply(runner.sequence[1]),
            "eager_held": lambda: model(*args, **kw),
            "tcd_eager_held": runner.eager_fn,
        }
        wanted = [c for c in a.callables.split(",") if c in fns]
    info["threads"] = [t.name for t in threading.enumerate()]
    info["torch_threads"] = (torch.get_num_threads(), torch.get_num_interop_threads())
    try:
        import psutil

        me = psutil.Process()
        info["os_threads"] = me.num_threads()
        info["children"] = [" ".join(c.cmdline()[:4])[:120] for c in me.children(recursive=True)]
    except Exception as exc:  # noqa: BLE001
        info["children"] = repr(exc)
    import contextlib

    with contextlib.nullcontext() if a.no_outer else ng():
        res = round_robin({n: fns[n] for n in wanted}, a.budget)
    info["median_s"] = res
    e = res.get("eager") or res.get("tcd_eager")
    info["minor_faults_per_call"] = {n: round(f / c, 1) for n, (c, f) in FAULTS.items()}
    info["speedup"] = {n: e / v for n, v in res.items() if n not in ("eager", "rounds", "k")}
    print(json.dumps(info))


if __name__ == "__main__":
    main()
