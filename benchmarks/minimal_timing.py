"""Minimal reference timing of a target: fresh process, 1 thread, torch.compile (inductor), first call,
warm-up, then interleaved eager/compiled batches within a budget, the same scheme as
tcdoctor.probes.timing.measure (batches of back-to-back calls lasting ~2 ms, order alternating, medians).

Usage: python benchmarks/minimal_timing.py benchmarks/resnet18.py:build [--budget 5] [--threads 1] [--json out.json]
Set TORCHINDUCTOR_CACHE_DIR to a shared dir to keep compiles warm.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
import time


def load(target: str):
    path, _, fn = target.partition(":")
    spec = importlib.util.spec_from_file_location("tcd_target", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tcd_target"] = mod
    spec.loader.exec_module(mod)
    model, inputs = getattr(mod, fn or "build")()
    return model, inputs if isinstance(inputs, tuple) else (inputs,)


def batch(fn, x, k: int) -> float:
    t0 = time.perf_counter()
    for _ in range(k):
        fn(*x)
    return (time.perf_counter() - t0) / k


def interleaved(
    eager, compiled, x, budget_s: float, target_sample_s: float = 0.002, min_pairs: int = 10
) -> dict:
    est = min(batch(eager, x, 1), batch(compiled, x, 1))
    k = max(1, min(10_000, math.ceil(target_sample_s / max(est, 1e-7))))
    e_s, c_s = [], []
    deadline = time.perf_counter() + budget_s
    while len(e_s) < min_pairs or time.perf_counter() < deadline:
        if len(e_s) % 2 == 0:
            e_s.append(batch(eager, x, k))
            c_s.append(batch(compiled, x, k))
        else:
            c_s.append(batch(compiled, x, k))
            e_s.append(batch(eager, x, k))
    e, c = statistics.median(e_s), statistics.median(c_s)
    return {
        "eager_median_s": e,
        "compiled_median_s": c,
        "speedup": e / c,
        "samples": len(e_s),
        "calls_per_sample": k,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--budget", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    model, x = load(a.target)
    with torch.no_grad():
        cm = torch.compile(model, backend=a.backend)
        t0 = time.perf_counter()
        cm(*x)
        first = time.perf_counter() - t0
        for _ in range(3):
            cm(*x)
            model(*x)
        r = interleaved(model, cm, x, a.budget)
    r.update(
        first_call_s=first, threads=torch.get_num_threads(), interop=torch.get_num_interop_threads()
    )
    print(json.dumps(r))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(r, fh)


if __name__ == "__main__":
    main()
