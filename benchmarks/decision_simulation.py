"""Issue 34's simulation, from the code's own formulas: how often the verdict and the gate decide
right, and the same twice, under the old rule (a 95% prediction interval over three processes) and
the new one (a confidence interval of the typical process, processes added while undecided, each
look at Pocock's level).

Processes are log-normal around the true speedup with `--spread` between them and 1% within (each
process's own paired interval ±2%). No torch; the decisions are tcdoctor's functions.

Usage: python benchmarks/decision_simulation.py [--spread 0.05] [--trials 2000]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

from tcdoctor import stats
from tcdoctor.report.processes import claims, regimes, sequential
from tcdoctor.thresholds import RULES

M = RULES.min_speedup


def _proc(s: float) -> dict:
    return {
        "eager": {"median_s": 1e-3},
        "compiled": {"median_s": 1e-3 / s},
        "speedup": s,
        "speedup_ci": [s * 0.98, s * 1.02],
    }


def _named(speeds: list[float]) -> list[tuple[str, str, dict]]:
    return [(f"p{i}", regimes.AS_LAUNCHED, _proc(s)) for i, s in enumerate(speeds)]


def old_interval(speeds: list[float]) -> tuple[float, float]:
    """Issue 27's headline: the prediction interval over three processes, widened to hold each
    process's own paired interval."""
    _, lo, hi = stats.prediction_interval(speeds)
    return min(lo, *(s * 0.98 for s in speeds)), max(hi, *(s * 1.02 for s in speeds))


def new_run(
    true: float, spread: float, rng: random.Random, cap: int = 6, gate: tuple = ()
) -> tuple[tuple[float, float], int]:
    """One analysis by the new rule: (decision interval, processes timed)."""
    level = sequential.look_level(cap)
    speeds: list[float] = []
    for n in range(1, cap + 1):
        speeds.append(true * math.exp(rng.gauss(0, spread) + rng.gauss(0, 0.01)))
        if n < sequential.MIN_LOOK:
            continue
        rows = regimes.classify([regimes.row(a, b, c) for a, b, c in _named(speeds)])
        if sequential.decided(rows, gate, M, level) or n == cap:
            seq = {"cap": cap, "looks": sequential.looks(cap), "level": level}
            out = claims.combine(_named(speeds), seq)
            return tuple(out["speedup_ci"]), n
    raise AssertionError


def old_run(true: float, spread: float, rng: random.Random) -> tuple[float, float]:
    speeds = [true * math.exp(rng.gauss(0, spread) + rng.gauss(0, 0.01)) for _ in range(3)]
    return old_interval(speeds)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spread", type=float, default=0.05)
    ap.add_argument("--trials", type=int, default=2000)
    a = ap.parse_args()
    rng = random.Random(34)
    print(f"processes log-normal, {a.spread:.0%} between, 1% within; {a.trials} trials each")
    print("\nverdict 'significantly faster' (lower bound >= 1.02): old / new (mean processes)")
    for true in (1.0, 1.05, 1.1, 1.2, 1.3):
        old = statistics.fmean(old_run(true, a.spread, rng)[0] >= M for _ in range(a.trials))
        runs = [new_run(true, a.spread, rng) for _ in range(a.trials)]
        new = statistics.fmean(ci[0] >= M for ci, _ in runs)
        n = statistics.fmean(k for _, k in runs)
        print(f"  true {true:.2f}x: {old:.0%} / {new:.0%} ({n:.1f})")
    print("\ncheck --min-speedup X: two identical runs disagree (old / new, mean processes)")
    x = 1.5
    for ratio in (1.05, 1.15, 1.25, 1.4, 1.56):
        true = x * ratio
        old_pass = [old_run(true, a.spread, rng)[0] >= x for _ in range(a.trials)]
        p = statistics.fmean(old_pass)
        runs = [new_run(true, a.spread, rng, gate=(x,)) for _ in range(a.trials)]
        q = statistics.fmean(ci[0] >= x for ci, _ in runs)
        n = statistics.fmean(k for _, k in runs)
        print(f"  true = {ratio:.2f} X: {2 * p * (1 - p):.0%} / {2 * q * (1 - q):.0%} ({n:.1f})")
    print("\ncheck --baseline --max-slowdown 10, 3 processes a side: fails")
    for change in (1.0, 0.9, 0.8):
        fails = 0
        for _ in range(a.trials):
            old = [2 * math.exp(rng.gauss(0, a.spread) + rng.gauss(0, 0.01)) for _ in range(3)]
            new = [
                2 * change * math.exp(rng.gauss(0, a.spread) + rng.gauss(0, 0.01)) for _ in range(3)
            ]
            _, upper, _, _ = stats.welch_log_ratio(new, old)
            fails += upper < 0.9
        print(f"  true change {change - 1:+.0%}: {fails / a.trials:.1%}")


if __name__ == "__main__":
    main()
