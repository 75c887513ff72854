"""The verdict's thresholds, each declared once (`Rules`, its defaults `RULES`), and the break-even
horizons a report lists (`HORIZONS`).

`Rules` is a frozen dataclass: one field per threshold, its default the figure tcdoctor judges
with and its comment why. Every rule reads an attribute (`rules.min_speedup`); a changed
threshold is a new value (`RULES.replace(expected_calls=1_000)`: `verdict.decide`'s
--expected-calls and --min-speedup, tests), never a mutated one. A report stores the rules it was
judged with as a plain JSON object (`Verdict.rules`, `to_dict`: the same keys and values as
before `Rules` existed) and a reader gets them back with `Rules.from_dict`.

The lowest layer (beside units.py and outcomes.py): report/ (the claims' equivalence margin, the
rows' `significantly_faster`), probes/, experiments/ and verdict/ all read it, so no figure here
is declared again above.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping


@dataclass(frozen=True)
class Rules:
    """The verdict's thresholds (the table in docs/verdict.md: tests/test_docs.py checks it)."""

    # the lower bound of the speedup's decision interval must reach this to count as faster
    min_speedup: float = 1.02
    # "No difference that matters": the decision interval within [1/margin, margin] (two one-sided
    # tests, report/processes/claims.equivalent). ±10% is what the cap reaches at typical spread:
    # simulated through the launcher's loop (benchmarks/equivalence_simulation.py), a truly equal
    # model is called the same 99% of the time at 2% spread between processes and about half at
    # 5%, where ±2% (the old band, min_speedup itself) was reached 5% and 0.3% of the time.
    equivalence_margin: float = 1.10
    expected_calls: int = 100_000  # default horizon for break-even (--expected-calls)
    # guard evaluation above this share of a compiled call is flagged
    guard_overhead_fraction: float = 0.20
    # cold compile this many times the warm one: advise keeping the cache
    cold_warm_ratio: float = 3.0
    compile_seconds_warn: float = 60.0  # first call slower than this gets compile-time advice
    # this many graph breaks in the whole model: also try compiling its submodules
    regional_auto_breaks: int = 3
    # one compile's seconds differ this much between processes (the same RoPE compile took 19.8 s
    # and 28.1 s in two): a shape setting wins on compile + calls only by more than this share of
    # the larger compile time
    compile_spread: float = 0.25
    # a graph break's bounded gain, as a share of the compiled call, differs up to this many times
    # between analyses of the same code (verdict/break_pays.py; largest seen here: 1.23, the first
    # break of samples/two_breaks.py at 21-26% in three Inductor analyses under load, whose seconds
    # moved 2.3x; lstm_lm 1.16 over four, loop_break 1.03 over six): it pays, or not, only when
    # the whole range clears what compiled must lose
    gain_bound_spread: float = 1.4
    # the compiled call's peak above eager's by more than this share of eager's peak AND by more
    # than memory_growth_min_bytes: the report then splits the compiled peak by graph
    # (probes/memory_graphs.py); below either, one line and nothing profiled (a few allocations
    # differ on every model)
    memory_growth_fraction: float = 0.10
    memory_growth_min_bytes: int = 1024 * 1024
    # the serving section's paired intervals (report/processes/paired.py): their level, and the
    # fewest requests both sides served for one to be taken (fewer give no interval)
    serving_level: float = 0.95
    min_pairs: int = 5
    # a generation's paired replay (probes/generate.py `replay_paired`) serves the prompts in
    # rounds until it holds at least this many eager/compiled pairs (or its time runs out): with
    # the 8 prompts of samples/generate.py, one round's median pair moved 0.12-0.21 (log) between
    # two processes and 2 of 4 Inductor analyses could not decide; with 32 pairs 0.02-0.04, both
    # decided (notes of issue 60)
    generation_pairs: int = 32

    def replace(self, **changes: Any) -> Rules:
        """These rules with some thresholds changed (dataclasses.replace); a name that is not a
        threshold is a TypeError, never a silently ignored key."""
        unknown = sorted(set(changes) - set(self.names()))
        if unknown:
            known = ", ".join(self.names())
            raise TypeError(f"not a threshold: {', '.join(unknown)} (the thresholds: {known})")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, float]:
        """The JSON object a report stores (`Verdict.rules`): every threshold by name, in the
        order declared, its value as given (ints stay ints)."""
        return {name: getattr(self, name) for name in self.names()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Rules:
        """A saved report's rules back. A threshold the file lacks (one written before the
        threshold existed: equivalence_margin and the spreads came later) takes its default, the
        value those reports' readers fell back to; a key this version does not know (a newer
        tcdoctor's threshold) is ignored, since no rule here reads it."""
        known = set(cls.names())
        return cls(**{k: v for k, v in (data or {}).items() if k in known})

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The thresholds' names, in the order declared."""
        return tuple(f.name for f in dataclasses.fields(cls))


RULES = Rules()

# The horizons a report's break-even is read against (Verdict.break_even["horizons"]).
HORIZONS: Mapping[str, int] = MappingProxyType(
    {
        "one epoch of 1,000 steps": 1_000,
        "one epoch of 10,000 steps": 10_000,
        "a server handling 1M requests": 1_000_000,
    }
)
