"""The serving and generation sections' one percentile rule, and the properties that derive each
side's p50/p90/p99 from it (report/sections/serving.py's sides, the proof and the shape strategies;
report/sections/generation.py's TTFT, ITL and TPOT).

Rule: `stats.nearest_rank` (the smallest value with at least q of the served values at or below
it, as serving benchmarks report p50/p90/p99) over the values served: a request the model rejected
has no latency (null at its index) and is left out; none served gives None. Each percentile is a
derived property (a record lists it in its DERIVED), written to the JSON for machines that read
it and recomputed on load, so a figure and the values it is read from never disagree.
"""

from __future__ import annotations

from typing import Any

from ...stats import nearest_rank


def percentile(values: list[float | None] | None, q: float) -> float | None:
    """The nearest-rank percentile q of the values served (None: none served)."""
    served = [x for x in values or [] if x is not None]
    return nearest_rank(served, q) if served else None


def served(values: list[float | None]) -> tuple[int, int]:
    """(values served, values replayed): a request the model rejected is null at its index."""
    return sum(1 for x in values if x is not None), len(values)


def quantile(values: str, q: float) -> property:
    """A property: the nearest-rank percentile q of the record's attribute `values` (a field or
    a property of it)."""

    def get(self: Any) -> float | None:
        return percentile(getattr(self, values), q)

    get.__doc__ = f"The nearest-rank p{round(q * 100)} of `{values}` (None: none served)."
    return property(get)


class Percentiles:
    """p50/p90/p99/max of `latencies_s` (a Record's field): a side, a proof, a strategy."""

    latencies_s: list[float | None]

    p50_s = quantile("latencies_s", 0.50)
    p90_s = quantile("latencies_s", 0.90)
    p99_s = quantile("latencies_s", 0.99)
    max_s = quantile("latencies_s", 1.0)
