"""Does tcdoctor's timed call path cost more per call than a minimal script's call? (issue 13; the
decision tests/test_timing_fidelity.py takes)

Method: `timing.measure` itself, the minimal call (the same compiled callable, no_grad held by the
caller) in its "eager" slot and tcdoctor's path (`PhaseRunner.compiled_fn`) in its "compiled" slot,
rounds interleaved so machine drift cancels; speedup = minimal / path with its paired-bootstrap 95%
interval. Sampling stops once that interval answers where it lies against MARGIN (the path at most
7% costlier: issue 13's bias was 7-10%), within BUDGET_S.

Three answers, as the product decides (on an interval, never on a point figure): "pass" = the
interval wholly above MARGIN; "fail" = wholly below it (the path shown costlier); "too noisy" = it
straddles MARGIN when the budget ends.

Why not the point figure. The test asserted speedup > 0.93 and failed in two whole timing runs, the second in CI
(0.80 and 0.88, no load seen by the round rule; in the second, 200 calls of each side timed one
after the other right afterwards read the path *faster*, 1.41 against 1.62 ms). The point figure
of identical sides spreads past that margin on a noisy host: with a neighbour pinned to the same
core, busy 30 ms of every 90 (a third of a core, under the load rule's half a core; a host's steal
time is as invisible), the test's old measurement (a fixed 2 s, no question) read the same callable
on both sides as 0.914 (interval 0.86-1.08) in one of four trials (2026-11-30), where this
script's decision said "pass" or "too noisy", never "fail" (the test's docstring has the counts).

Usage: python benchmarks/path_cost.py --trials 3 --plants none,aa,slow [--neighbour BUSY,IDLE]
  none: the test's comparison; aa: the minimal call on both sides (must never fail);
  slow: the path plus a busy wait of SLOW_SHARE of a call (must fail when the host lets it show).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Any, Callable

import smallconv
import torch

MARGIN = 0.93
BUDGET_S = 8.0
SLOW_SHARE = 0.10


def setup() -> tuple[Callable[[], Any], Callable[[], Any], Any]:
    """The test's subject: smallconv compiled with the eager backend through tcdoctor's runner, one
    thread. (minimal call, tcdoctor's path, the runner's sync)"""
    from tcdoctor.options import Options
    from tcdoctor.run.runner import PhaseRunner
    from tcdoctor.target.workload import Workload

    torch.set_num_threads(1)
    model, inputs = smallconv.build()
    runner = PhaseRunner(
        Workload(model, inputs), Options(backend="eager", budget_s=2.0), sink=lambda ev: None
    )
    for phase in ("environment", "eager", "compile"):
        runner.measure(phase)
    compiled, args = runner.compiled, tuple(runner.workload.call_args.args)

    def minimal():  # what a minimal script does: the same compiled callable, no_grad held by the caller
        return compiled(*args)

    return minimal, runner.compiled_fn, runner.sync


def measure(minimal: Callable[[], Any], path: Callable[[], Any], sync: Any) -> dict:
    """Interleaved rounds (`timing.measure`, minimal in the eager slot) until the interval answers
    against MARGIN or BUDGET_S ends."""
    from tcdoctor.probes import timing

    with torch.no_grad():
        return timing.measure(
            minimal, path, sync, BUDGET_S, question=timing.Question(thresholds=(MARGIN,))
        )


def decide(data: dict) -> str:
    """pass / fail / too noisy, from the interval alone."""
    lo, hi = data["speedup_ci"]
    return "pass" if lo > MARGIN else "fail" if hi < MARGIN else "too noisy"


def slowed(fn: Callable[[], Any], extra_s: float) -> Callable[[], Any]:
    """`fn` plus a busy wait of `extra_s` (a planted per-call cost, test-only)."""

    def call():
        out = fn()
        end = time.perf_counter() + extra_s
        while time.perf_counter() < end:
            pass
        return out

    return call


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--plants", default="none,aa,slow")
    ap.add_argument(
        "--neighbour", default="", help="BUSY_MS,IDLE_MS: a busy neighbour on this core"
    )
    args = ap.parse_args()
    hog = None
    if args.neighbour:
        busy, idle = (float(v) / 1e3 for v in args.neighbour.split(","))
        core = sorted(os.sched_getaffinity(0))[0]
        os.sched_setaffinity(0, {core})
        spin = (
            "import time,sys\nb,i=float(sys.argv[1]),float(sys.argv[2])\nwhile True:\n"
            " t=time.perf_counter()\n while time.perf_counter()-t<b: pass\n time.sleep(i)"
        )
        hog = subprocess.Popen(
            [sys.executable, "-c", spin, str(busy), str(idle)],
            preexec_fn=lambda: os.sched_setaffinity(0, {core}),
        )
    try:
        minimal, path, sync = setup()
        with torch.no_grad():
            call_s = min(_time_one(minimal) for _ in range(20))
        sides = {"none": path, "aa": minimal, "slow": slowed(path, SLOW_SHARE * call_s)}
        for trial in range(args.trials):
            for plant in args.plants.split(","):
                data = measure(minimal, sides[plant], sync)
                lo, hi = data["speedup_ci"]
                print(
                    f"trial {trial} {plant:5s} {decide(data):9s} speedup {data['speedup']:.3f} "
                    f"[{lo:.3f}, {hi:.3f}] pairs {data['samples']} stopped {data['stopped']} "
                    f"reruns {data['load']['retimed_pairs'] if data.get('load') else '-'}",
                    flush=True,
                )
    finally:
        if hog is not None:
            hog.kill()


def _time_one(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
