"""Is A faster than B, request by request: the serving section's one comparison (the strategies
against the reference, the operating model's eager, JIT and AOT against each other), the record
it gives (`Interval`) and the claim it makes (`Claim`, the one enum of every "which is faster").

Method. A and B served the same requests; the statistic is the ratio of their median latencies
on the requests both served, paired by request (`ratio_interval`). Its percentile-bootstrap
interval (1,000 resamples, seed 0, at `Rules.serving_level`) speaks of one process each; it
resamples whole prompts (`prompts`, stats.cluster_bootstrap): where the requests were served in
rounds of `round_size` (probes/generate.py `in_rounds`: the same prompts in the same order each
round), request i is prompt i % round_size, and a drawn prompt keeps all its rounds' pairs. Its 4
repeats share the prompt's length and its systematic ratio: counted as 4 independent pairs they
would narrow the interval with evidence that is not there. One pass (no `round_size`, or every
prompt once) resamples each request alone: exactly the interval of the bootstrap before rounds; a process-to-process spread (`log_spread`: |log ratio of medians| between two
replays of one configuration) widens it on both sides, so a claim holds across processes. The
interval's upper bound below 1 is FASTER (A takes less time), its lower bound above 1 SLOWER,
anything else UNDECIDED, said "inside the noise"; without a spread it decides nothing across
processes. Fewer than `Rules.min_pairs` requests served by both: no interval.

Pitfalls. The requests a strategy served on the eager fallback, or that compiled, are not its
steady state (`steady` leaves them out). A ratio of *times*: below 1 is faster, unlike the
headline's speedup (eager ÷ compiled). The JSON's `decides` is derived from the bounds, so a saved
report's words are recomputed on load and read the same.

Torch-free: assembled in the parent, re-read by `tcdoctor report`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from ...stats import cluster_bootstrap, percentile_ci
from ...thresholds import RULES, Rules
from ..record import Record
from .claims import Claim

NOT_ACROSS = "not decided across processes (the reference ran in one process only)"
NOISE = "inside the noise"


def steady(latencies: list | None, skip: set[int] | None = None) -> dict[int, float]:
    """{request index: latency} of the requests served, less those in `skip` (the eager
    fallback's: a strategy's requests that ran eagerly are not its steady state)."""
    skip = skip or set()
    return {i: x for i, x in enumerate(latencies or []) if x is not None and i not in skip}


def log_spread(a: list | None, b: list | None, rules: Rules = RULES) -> float | None:
    """|log(ratio of medians)| between two replays of one configuration in two processes, on the
    requests both served (paired by request); None with fewer than `rules.min_pairs` of them."""
    return median_spread(steady(a), steady(b), rules)


def median_spread(
    x: Mapping[int, float], y: Mapping[int, float], rules: Rules = RULES
) -> float | None:
    """|log(median x / median y)| on the requests both hold; None under `rules.min_pairs`."""
    ratio = paired_ratio(x, y, rules)
    return abs(math.log(ratio)) if ratio else None


def paired_ratio(
    num: Mapping[int, float], den: Mapping[int, float], rules: Rules = RULES
) -> float | None:
    """median(num) / median(den) on the requests both served (`ratio_interval`'s statistic);
    None under `rules.min_pairs` such requests."""
    both = sorted(set(num) & set(den))
    if len(both) < rules.min_pairs:
        return None
    return statistics.median([num[i] for i in both]) / statistics.median([den[i] for i in both])


def per_request(num: Mapping[int, float], den: Mapping[int, float]) -> dict[int, float]:
    """{request: num / den} on the requests both served: where the two were served back to back
    (probes/generate.py `replay_paired`), each request's ratio is of one moment of the host."""
    return {i: num[i] / den[i] for i in sorted(set(num) & set(den)) if den[i] > 0}


def pair_spread(
    a: tuple[Mapping[int, float], Mapping[int, float]],
    b: tuple[Mapping[int, float], Mapping[int, float]],
    rules: Rules = RULES,
) -> float | None:
    """The spread between two processes of a paired ratio: |log| of the median per-request ratio
    (`per_request` of a (num, den)) over the same in the other process. Where each request's two
    halves were served back to back, a host's slow phase in one process moves both halves of its
    pairs, not this spread; and each request is its own reference (a long prompt's time is
    divided by its own, never by another request's). None where either is not known."""
    return median_spread(per_request(*a), per_request(*b), rules)


def prompts(both: list[int], round_size: int | None) -> list[list[int]]:
    """The positions in `both` (sorted request indices) grouped by prompt: request i of rounds of
    `round_size` is prompt i % round_size; clusters in the order of their first request. Without
    `round_size` each request is its own prompt (one pass)."""
    groups: dict[int, list[int]] = {}
    for pos, i in enumerate(both):
        groups.setdefault(i % round_size if round_size else i, []).append(pos)
    return list(groups.values())


def pair_interval(
    num: Mapping[int, float],
    den: Mapping[int, float],
    floor: float | None,
    vs: str,
    rules: Rules = RULES,
    round_size: int | None = None,
) -> Interval | None:
    """`ratio_interval` of the per-request ratios num / den (served back to back: each of one
    moment) against 1: the median request's ratio, its bootstrap interval over the requests,
    widened by `floor` (`pair_spread`). Unlike the ratio of two sides' medians, the median of the
    pairs' ratios never divides one request's time by another's (the prompts' lengths differ, so
    the two medians can fall on different requests). `round_size`: the replay's rounds (the
    record's `round_size`): the bootstrap resamples whole prompts (see the module's docstring)."""
    ratios = per_request(num, den)
    return ratio_interval(ratios, dict.fromkeys(ratios, 1.0), floor, vs, rules, round_size)


@dataclass
class Interval(Record):
    """A / B as a ratio of median times on the requests both served (`ratio`), its interval
    (`low`..`high` at `level`, widened by `process_spread` where `processes` is 2), against `vs`
    (B's name); `claim` and its words `decides` derived from the bounds."""

    DERIVED = ("decides",)

    vs: str | None = None
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    level: float | None = None
    pairs: int | None = None
    process_spread: float | None = None
    processes: int | None = None

    @property
    def across(self) -> bool:
        """Widened by the spread between processes: only then does it decide."""
        return self.process_spread is not None

    @property
    def claim(self) -> Claim:
        if not self.across or self.low is None or self.high is None:
            return Claim.UNDECIDED
        if self.high < 1:
            return Claim.FASTER
        if self.low > 1:
            return Claim.SLOWER
        return Claim.UNDECIDED

    @property
    def inside_the_noise(self) -> bool:
        """Judged across processes, and neither side: as fast as B within the noise."""
        return self.across and self.claim is Claim.UNDECIDED

    @property
    def decides(self) -> str:
        if not self.across:
            return NOT_ACROSS
        return NOISE if self.claim is Claim.UNDECIDED else str(self.claim)


def ratio_interval(
    num: Mapping[int, float],
    den: Mapping[int, float],
    floor: float | None,
    vs: str,
    rules: Rules = RULES,
    round_size: int | None = None,
) -> Interval | None:
    """`num` / `den` on the requests both served (see the module's docstring); None under
    `rules.min_pairs` such requests. `round_size`: requests served in rounds of that many
    prompts, resampled by prompt (`prompts`)."""
    both = sorted(set(num) & set(den))
    if len(both) < rules.min_pairs:
        return None
    a, b = [num[i] for i in both], [den[i] for i in both]

    def stat(idx: list[int]) -> float:
        return statistics.median([a[i] for i in idx]) / statistics.median([b[i] for i in idx])

    level = rules.serving_level
    clusters = prompts(both, round_size)
    low, high = percentile_ci(cluster_bootstrap(stat, clusters, resamples=1000, seed=0), level)
    widen = math.exp(floor) if floor is not None else None
    return Interval(
        vs=vs,
        ratio=statistics.median(a) / statistics.median(b),
        low=low / widen if widen else low,
        high=high * widen if widen else high,
        level=level,
        pairs=len(both),
        process_spread=floor,
        processes=2 if floor is not None else 1,
    )
