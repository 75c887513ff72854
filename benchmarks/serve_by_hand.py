"""The serving replay written by hand, in a process of its own: the figure tcdoctor's serving
section must agree with (issue 55: p50/p99 within 10%).

    python benchmarks/serve_by_hand.py samples/serving.py:build --traffic 200 --backend inductor --threads 1

What it does, as a server handling one request at a time would, and nothing of tcdoctor's beyond
loading the target and producing its traffic's requests (`tcdoctor.target.load.load`,
`tcdoctor.target.traffic.requests`, every RNG reset before each replay as tcdoctor does, so both
replay the same requests):
1. one untimed eager call on the target's example inputs (the runtime's lazy start);
2. eager: each request timed with perf_counter around `with torch.no_grad(): model(*args)`;
3. compiled (`torch.compile(model, backend=..., **the target's compile_kwargs)`), cold: the same
   requests, the compiles inside the requests that trigger them;
4. compiled after warm-up: the same requests again (everything compiled).
It prints p50/p99 (nearest rank: the smallest latency with at least that share at or below it)
of each replay. tcdoctor's `replay.eager` and `replay.compiled` are (2) and (3); its proof's and
host part's replays are (4) in fresh processes.
"""

from __future__ import annotations

import argparse
import copy
import math
import time

import torch

from tcdoctor.target.load import load
from tcdoctor.target.pristine import reset_rng_state
from tcdoctor.target.traffic import from_workload, requests


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s) - 1e-9) - 1)]


def serve(fn, workload, traffic, n: int) -> list[float]:
    reset_rng_state()
    out = []
    for r in requests(traffic, workload, n):
        t0 = time.perf_counter()
        with torch.no_grad():
            r.args.apply(fn)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target")
    ap.add_argument("--traffic", type=int, default=None)
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    w = load(a.target)
    traffic = w.traffic or from_workload(w)
    n = a.traffic or traffic.default_n()
    eager = copy.deepcopy(w.model)
    with torch.no_grad():
        w.call_args.apply(eager)
    rows = {"eager": serve(eager, w, traffic, n)}
    compiled = torch.compile(copy.deepcopy(w.model), backend=a.backend, **w.compile_kwargs)
    rows["compiled, cold"] = serve(compiled, w, traffic, n)
    rows["compiled, after warm-up"] = serve(compiled, w, traffic, n)
    for name, xs in rows.items():
        print(f"{name:24s} p50 {pct(xs, 0.5) * 1e3:9.3f} ms   p99 {pct(xs, 0.99) * 1e3:9.3f} ms")


if __name__ == "__main__":
    main()
