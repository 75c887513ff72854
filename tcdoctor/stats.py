"""Robust summary statistics for timing samples; pure Python so reports can be re-rendered without torch."""

from __future__ import annotations

import random
import statistics
from typing import Sequence


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
    rng = random.Random(seed)
    n = len(num)
    ratios = []
    population = range(n)
    for _ in range(resamples):
        idx = rng.choices(population, k=n)
        ratios.append(
            statistics.median([num[i] for i in idx]) / statistics.median([den[i] for i in idx])
        )
    alpha = (1 - level) / 2
    return quantile(ratios, alpha), quantile(ratios, 1 - alpha)
