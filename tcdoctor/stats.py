"""Robust summary statistics for timing samples; pure Python so reports can be re-rendered without torch."""

from __future__ import annotations

import functools
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


def nearest_rank(xs: Sequence[float], q: float) -> float:
    """The nearest-rank percentile, q in (0, 1]: the smallest sample with at least q of the samples
    at or below it (sorted[ceil(q·n) - 1]), as serving benchmarks report p50/p90/p99 (vLLM's and
    Triton's perf_analyzer's); always one of the samples, never an interpolation between two. With
    fewer than 100 samples p99 is the maximum."""
    s = sorted(xs)
    if not s:
        raise ValueError("no samples")
    if not 0 < q <= 1:
        raise ValueError("q must be in (0, 1]")
    return s[max(0, math.ceil(q * len(s) - 1e-9) - 1)]


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


def cluster_bootstrap(
    statistic: Callable[[list[int]], float],
    clusters: Sequence[Sequence[int]],
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> list[float]:
    """`statistic` over `resamples` resamples of whole clusters of indices: each resample draws
    len(clusters) clusters with replacement and keeps every index of a drawn cluster (a cluster
    bootstrap). Samples that are not independent of each other (one prompt served in several
    rounds shares its length, its systematic ratio) must be resampled together, or the interval
    counts repeats as evidence and is too narrow.

    Clusters of one index each draw exactly what `bootstrap` draws (the same seeded sequence of
    choices), so data without repeats gives exactly the interval it gave before.
    """
    rng = random.Random(seed)
    population = range(len(clusters))
    k = len(clusters)
    return [
        statistic([i for c in rng.choices(population, k=k) for i in clusters[c]])
        for _ in range(resamples)
    ]


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


# Student's t, two-sided 95% (the 0.975 quantile), for 1 to 30 degrees of freedom; beyond, the
# normal 1.96, within 4% of t (df 31: 2.040). Pure Python: reports re-render without scipy.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (≥ 1)."""
    if df < 1:
        raise ValueError("need at least one degree of freedom")
    return _T975[df - 1] if df <= len(_T975) else 1.96


def prediction_interval(ratios: Sequence[float]) -> tuple[float, float, float]:
    """(geometric mean, low, high): the 95% prediction interval for one more draw of a positive
    ratio, from `ratios` drawn independently (≥ 2), on the log scale.

    The next draw's log lies within mean ± t(n−1) · s · √(1 + 1/n), where s is the sample standard
    deviation of the logs: the interval must hold a new process's figure, not just the mean of
    those seen, and with n processes the spread itself is known only to n − 1 degrees of freedom
    (so two processes give a wide interval, honestly). Assumes log-normal draws.
    """
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    if n < 2:
        raise ValueError("need at least two draws")
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    half = t975(n - 1) * sd * math.sqrt(1 + 1 / n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


# Student's t for any (also fractional, Welch) degrees of freedom and any level: the regularized
# incomplete beta by its continued fraction (Numerical Recipes' betacf), inverted by bisection.
# Pure Python, exact to ~1e-10: the table above stays the reference for the 0.975 quantile.


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-12:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with `df` (> 0, fractional allowed) degrees of freedom."""
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=1024)
def t_quantile(p: float, df: float) -> float:
    """The p quantile (0 < p < 1) of Student's t with `df` degrees of freedom, by bisection
    (remembered: the same few levels and degrees of freedom are asked for again and again)."""
    if not 0 < p < 1 or df <= 0:
        raise ValueError("need 0 < p < 1 and df > 0")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10 * max(1.0, hi):
            break
    return (lo + hi) / 2


def log_mean_ci(
    ratios: Sequence[float], level: float = 0.95, floor_sd: float = 0.0
) -> tuple[float, float, float]:
    """(geometric mean, low, high): a `level` confidence interval of the typical ratio (the
    geometric mean) from `ratios` drawn independently (≥ 2): mean ± t(n−1) · s / √n on the logs.

    This is what a decision rests on: where the speedup of the script lies, not where one more
    process may land (that is `prediction_interval`, √(n+1) times wider). `floor_sd`: the logs'
    standard deviation is taken as at least this (each draw's own measurement noise, which a few
    draws that happen to agree would hide), with the normal quantile: that noise is known from
    each draw's hundreds of pairs, not estimated from the n draws (known_floor_half_width).
    """
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    if n < 2:
        raise ValueError("need at least two draws")
    mean = statistics.fmean(logs)
    half = known_floor_half_width(statistics.stdev(logs), n - 1, floor_sd, level) / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def known_floor_half_width(sd: float, df: float, floor_sd: float, level: float) -> float:
    """The half-width, per unit of 1/√n, of a two-sided `level` interval whose spread is the sample
    SD `sd` (Student's t with `df`) but never less than `floor_sd`, a spread known without sampling
    error (each draw's own measurement noise, from its hundreds of paired rounds): the normal
    quantile for the floor, t for the estimate, whichever is wider."""
    p = 1 - (1 - level) / 2
    return max(t_quantile(p, df) * sd if df > 0 else 0.0, normal_quantile(p) * floor_sd)


def welch_log_ratio(
    new: Sequence[float], old: Sequence[float], level: float = 0.95
) -> tuple[float, float, float, float]:
    """Welch's comparison of two sets of positive ratios on the log scale: (estimated change
    new/old as a ratio, the one-sided `level` upper confidence bound of that change, its two-sided
    `level` interval's low and high).

    Each side needs ≥ 2 draws; Welch–Satterthwaite degrees of freedom (unequal spreads allowed).
    A slowdown larger than a margin m is shown when the upper bound < 1 − m: the test errs at
    most 1 − level of the time when the true change is exactly −m.
    """
    a, b = [math.log(x) for x in new], [math.log(x) for x in old]
    if len(a) < 2 or len(b) < 2:
        raise ValueError("need at least two draws on each side")
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff, se = statistics.fmean(a) - statistics.fmean(b), math.sqrt(va + vb)
    if se == 0:
        return (math.exp(diff),) * 4  # type: ignore[return-value]
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    one = t_quantile(level, df) * se
    two = t_quantile(1 - (1 - level) / 2, df) * se
    return math.exp(diff), math.exp(diff + one), math.exp(diff - two), math.exp(diff + two)


def normal_quantile(p: float) -> float:
    """The p quantile (0 < p < 1) of the standard normal distribution."""
    return statistics.NormalDist().inv_cdf(p)


def pooled_log_sd(groups: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """(sd, degrees of freedom) of the logs of positive ratios, the spread pooled within `groups`
    (one-way analysis of variance: N − k degrees of freedom, one group: the sample SD with n − 1);
    None when that leaves no degree of freedom."""
    logs = [[math.log(x) for x in g] for g in groups if g]
    df = sum(len(g) for g in logs) - len(logs)
    if df < 1:
        return None
    ss = sum(sum((y - statistics.fmean(g)) ** 2 for y in g) for g in logs)
    return math.sqrt(ss / df), df


def log_sd_of_ci(ci: Sequence[float] | None, level: float = 0.95) -> float:
    """The log-scale standard error a two-sided `level` interval of a positive ratio implies
    (half its log width over the normal quantile); 0 when there is no usable interval."""
    if not ci or ci[0] is None or ci[1] is None or not 0 < ci[0] < ci[1]:
        return 0.0
    return math.log(ci[1] / ci[0]) / (2 * normal_quantile(1 - (1 - level) / 2))


# Group-sequential boundaries: looks at a growing number of independent draws, each look a test of
# the mean at the same nominal level (Pocock). The constant is computed for the looks' actual
# information (the number of draws at each look), not taken from a table for equally spaced looks.


def _simpson_weights(a: float, b: float, m: int) -> list[float]:
    h = (b - a) / (m - 1)
    return [h / 3 * (1 if i in (0, m - 1) else (4 if i % 2 else 2)) for i in range(m)]


def _norm_pdf(x: float) -> float:
    return math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def sequential_crossing(c: float, info: Sequence[float], points: int = 81) -> float:
    """P(|Z_k| ≥ c at any look k) when the mean is exactly the one tested: Z_k = W(I_k) / √I_k for
    a Brownian motion W and the looks' information I_1 < I_2 < … (for a mean of n independent
    draws, I = n). Armitage, McPherson and Rowe's recursive numerical integration: the density of
    W(I_k) over the region that has not crossed, carried from look to look by the increment's
    normal kernel, Simpson's rule on `points` (odd) nodes per look. Exact to about 1e-5 at 81."""
    s = math.sqrt(info[0])
    xs = [-c * s + 2 * c * s * i / (points - 1) for i in range(points)]
    f = [_norm_pdf(x / s) / s for x in xs]
    w = _simpson_weights(xs[0], xs[-1], points)
    for k in range(1, len(info)):
        sd = math.sqrt(info[k] - info[k - 1])
        b = c * math.sqrt(info[k])
        ys = [-b + 2 * b * i / (points - 1) for i in range(points)]
        wf = [wi * fi for wi, fi in zip(w, f)]
        f = [sum(a * _norm_pdf((y - x) / sd) for a, x in zip(wf, xs)) / sd for y in ys]
        xs, w = ys, _simpson_weights(-b, b, points)
    return 1.0 - sum(wi * fi for wi, fi in zip(w, f))


@functools.lru_cache(maxsize=64)
def pocock_constant(info: tuple[float, ...], alpha: float = 0.05) -> float:
    """Pocock's constant c for looks at information `info` (increasing; for the mean of n draws the
    n at each look): every look rejects at |Z| ≥ c, and all the looks together reject a true mean
    with probability `alpha` (two-sided). Bisection on sequential_crossing. Equally spaced looks
    give Pocock's (1977) table: 2 looks 2.178, 3: 2.289, 4: 2.361, 5: 2.413. Fewer looks than
    planned (a stop for time, a look skipped) only lower the overall error."""
    info = tuple(sorted(set(info)))
    lo, hi = normal_quantile(1 - alpha / 2), 6.0
    if len(info) == 1:
        return lo
    while hi - lo > 1e-5:
        mid = (lo + hi) / 2
        if sequential_crossing(mid, info) > alpha:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def pocock_level(info: tuple[float, ...], alpha: float = 0.05) -> float:
    """The two-sided confidence level every look uses (1 − the nominal level of pocock_constant)."""
    c = pocock_constant(tuple(info), alpha)
    return 1.0 - 2.0 * (1.0 - statistics.NormalDist().cdf(c))
