"""Adam's `opt.step` timed by hand against `tcdoctor analyze` of the same target.

The target (`build`) is PyTorch's "Compiling the optimizer" recipe: build() makes a model, runs one
forward and backward so every parameter has a `.grad`, builds Adam with a tensor learning rate and
returns `opt.step, ()`. What a step costs depends entirely on those gradients: a copy that loses them
(`copy.deepcopy` drops a parameter's `.grad`) steps nothing, about 30 µs instead of ~11 ms here. So
tcdoctor's eager median must match a by-hand median of `opt.step()` on the object build() returned.

By hand: one process, `torch.set_num_threads(1)` (tcdoctor's default), the step called on the
original object (compiled with `torch.compile(opt.step, backend=...)` for the compiled figure), a few
warm-up calls, then the median of single timed calls (a step lasts milliseconds: one call per sample
is well above the clock's resolution). Calls keep stepping the same parameters with the same
gradients, as tcdoctor's timed calls do.

Allocator: each Adam step allocates and frees ~16 MB intermediates; whether glibc hands them back
to the kernel (and the next step re-faults ~6000 pages, +30-50% here) depends on the heap's history,
so a by-hand process and tcdoctor's child can differ for that reason alone. Run both with
`MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824` to compare the step itself.

Usage: python benchmarks/opt_step_by_hand.py [--backend inductor] [--calls 60] [--tcdoctor]
[--eager-only] (`--tcdoctor` also runs `tcdoctor analyze` on this file's build and prints its
medians beside; `--eager-only` prints the eager median in seconds and nothing else).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable

import torch

LAYERS, WIDTH = 4, 1024  # ~11 ms per eager step on one thread of the dev machines


def build() -> tuple[Callable[[], None], tuple]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH, bias=False) for _ in range(LAYERS)])
    model(torch.rand(8, WIDTH)).sum().backward()
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
    return opt.step, ()


def median_step_s(step: Callable[[], None], calls: int = 60, warmup: int = 3) -> float:
    """Median seconds of one call, after `warmup` calls (the first compiled call compiles)."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def by_hand(backend: str | None, calls: int) -> float:
    """Median per step on the object build() returned, compiled with `backend` when given."""
    torch.set_num_threads(1)
    step, _ = build()
    if backend:
        step = torch.compile(step, backend=backend)
    return median_step_s(step, calls)


def tcdoctor_medians(backend: str, budget: float) -> dict:
    """`tcdoctor analyze` of this file's build: its eager and compiled medians per call."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        target = os.path.abspath(__file__) + ":build"
        cmd = [sys.executable, "-m", "tcdoctor", "analyze", target, "--backend", backend]
        cmd += ["--no-fixes", "--budget", str(budget), "--threads", "1", "-q", "--json", out]
        subprocess.run(cmd, cwd=tmp, check=False, capture_output=True, text=True, timeout=900)
        with open(out) as fh:
            rep = json.load(fh)
    rt = rep["runtime"]
    return {
        "eager": rt["eager"]["median_s"],
        "compiled": rt["compiled"]["median_s"],
        "state": rep["environment"].get("state"),
    }


def _by_hand_pair(backend: str, calls: int) -> tuple[float, float]:
    return by_hand(None, calls), by_hand(backend, calls)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--budget", type=float, default=3.0)
    ap.add_argument("--tcdoctor", action="store_true")
    ap.add_argument("--eager-only", action="store_true", help="print the eager median (s) only")
    a = ap.parse_args()
    if a.eager_only:
        print(by_hand(None, a.calls))
        return
    what = f"{LAYERS}x{WIDTH}x{WIDTH} Adam, 1 thread"
    runs = [_by_hand_pair(a.backend, a.calls)]
    print(
        f"by hand ({what}): eager {runs[0][0] * 1e3:.2f} ms/step, {a.backend} {runs[0][1] * 1e3:.2f}"
    )
    if not a.tcdoctor:
        return
    t = tcdoctor_medians(a.backend, a.budget)
    runs.append(_by_hand_pair(a.backend, a.calls))  # again after: the machine's load drifts
    print(
        f"by hand, after: eager {runs[1][0] * 1e3:.2f} ms/step, {a.backend} {runs[1][1] * 1e3:.2f}"
    )
    print(f"tcdoctor: eager {t['eager'] * 1e3:.2f} ms/step, {a.backend} {t['compiled'] * 1e3:.2f}")
    eager, compiled = statistics.mean(r[0] for r in runs), statistics.mean(r[1] for r in runs)
    print(
        f"tcdoctor / by hand (mean of before and after): eager {t['eager'] / eager:.2f}, ", end=""
    )
    print(f"{a.backend} {t['compiled'] / compiled:.2f}")
    print(f"state: {t['state']}")


if __name__ == "__main__":
    main()
