"""Robust summary statistics for timing samples; pure Python so reports can be re-rendered without torch."""

from __future__ import annotations

import math
import random
import statistics
from typing import Callable, Sequence


def quantile(xs: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default), q in [0, 1]."""
    s = sorted(xs)
    if not s:
        raise ValueError("no samples")
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(xs: Sequence[float]) -> dict:
    """Median, IQR and p10–p90 of per-call times in seconds."""
    return {
        "median_s": statistics.median(xs),
        "mean_s": statistics.fmean(xs),
        "p10_s": quantile(xs, 0.10),
        "p25_s": quantile(xs, 0.25),
        "p75_s": quantile(xs, 0.75),
        "p90_s": quantile(xs, 0.90),
        "min_s": min(xs),
        "max_s": max(xs),
        "samples": len(xs),
    }


def bootstrap(
    statistic: Callable[[list[int]], float], n: int, *, resamples: int = 1000, seed: int = 0
) -> list[float]:
    """`statistic` over `resamples` resamples of the indices 0..n-1, drawn with replacement.

    Indices rather than values, so paired samples can be resampled together (one index picks
    both members of a pair). Seeded: the same samples always give the same interval.
    """
    rng = random.Random(seed)
    population = range(n)
    return [statistic(rng.choices(population, k=n)) for _ in range(resamples)]


def percentile_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The central `level` interval of bootstrap values (the percentile method)."""
    alpha = (1 - level) / 2
    return quantile(values, alpha), quantile(values, 1 - alpha)


def median_ci(
    xs: Sequence[float], *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap CI for the median of one set of samples."""
    if not xs:
        raise ValueError("no samples")
    values = bootstrap(
        lambda idx: statistics.median([xs[i] for i in idx]), len(xs), resamples=resamples, seed=seed
    )
    return percentile_ci(values, level)


def ratio_of_medians_ci(
    num: Sequence[float],
    den: Sequence[float],
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap CI for median(num)/median(den) over *paired* samples.

    Pairs are resampled together because each eager/compiled pair was taken back to back,
    so machine drift is shared within a pair and cancels in the ratio.
    """
    if len(num) != len(den) or not num:
        raise ValueError("need equally many paired samples")
    values = bootstrap(
        lambda idx: (
            statistics.median([num[i] for i in idx]) / statistics.median([den[i] for i in idx])
        ),
        len(num),
        resamples=resamples,
        seed=seed,
    )
    return percentile_ci(values, level)


def geometric_mean(xs: Sequence[float]) -> float:
    """Geometric mean of positive ratios (speedups average on a log scale)."""
    if not xs:
        raise ValueError("no values")
    return math.exp(statistics.fmean(math.log(x) for x in xs))


def hierarchical_ratio_ci(
    processes: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Speedup across processes: (estimate, low, high) from a two-level bootstrap.

    `processes`: each process's paired samples (num, den), e.g. (eager, compiled). Each resample
    draws the processes with replacement, then each drawn process's pairs with replacement, takes
    that process's ratio of medians, and averages the drawn ratios geometrically; the estimate is
    the geometric mean of the processes' own ratios. Resampling processes first is what makes the
    interval cover process-to-process spread (each process's allocator state, code placement and
    neighbours shift its figure more than its own pairs vary: pyperf runs several workers for
    this); with one process it is the paired bootstrap of that process.
    """
    procs = [(list(n), list(d)) for n, d in processes if n and len(n) == len(d)]
    if not procs:
        raise ValueError("need at least one process with paired samples")
    own = [statistics.median(n) / statistics.median(d) for n, d in procs]
    rng = random.Random(seed)
    values = []
    for _ in range(resamples):
        drawn = []
        for p in rng.choices(range(len(procs)), k=len(procs)):
            num, den = procs[p]
            idx = rng.choices(range(len(num)), k=len(num))
            drawn.append(
                statistics.median([num[i] for i in idx]) / statistics.median([den[i] for i in idx])
            )
        values.append(geometric_mean(drawn))
    lo, hi = percentile_ci(values, level)
    return geometric_mean(own), lo, hi
