"""The speed sections: the timing of one process (`Timing`) and the headline `Runtime` across
processes; `vs_eager`, the row speed text every timed row (strategies, remedies) shares; the
profiler's view of the calls (`Profile`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ... import units
from ...thresholds import RULES, Rules
from ..keyed import Keyed
from ..processes import claims
from ..processes.claims import Claim
from ..processes.regimes import least_favourable
from ..processes.rows import Load, ModeRow, ProcessRow, Regime, Sequence, Timing
from ..record import Record
from ..rules import (
    ACROSS_WORDS,
)


def ci_bounds(ci: list | tuple | None) -> tuple[float | None, float | None]:
    return (ci[0], ci[1]) if ci else (None, None)


def vs_eager(
    speedup: float | None,
    own_ci: list | None,
    decision_ci: list | None,
    decision_method: str | None,
    word: str = "",
) -> str:
    """'1.30× faster (95% CI 1.25–1.35; 1.09–1.55× with the spread between processes)': a row's
    speed as its process measured it, and the decision interval its claims rest on
    (rules.row_decision_interval) where that differs; as before for a row without one."""
    text = units.ratio(speedup, own_ci, word)
    if decision_method is None or speedup is None or (decision_ci or None) == (own_ci or None):
        return text
    across = (
        f"{units.span(decision_ci)} {ACROSS_WORDS}"
        if decision_ci
        else "not judged across processes"
    )
    return text[:-1] + f"; {across})" if text.endswith(")") else f"{text} ({across})"


class Claimed:
    """What a figure that makes a `claim(rules)` says of compiled: the one rule for "significantly
    faster" and "slower", shared by the report's `Runtime` and the verdict's `Figures`
    (verdict/figures.py), as every strategy row's rule is (report/rules.py)."""

    def significantly_faster(self, rules: Rules) -> bool:
        return self.claim(rules) == Claim.FASTER  # type: ignore[attr-defined]

    @property
    def significantly_slower(self) -> bool:
        return self.claim(RULES.replace(min_speedup=1.0)) == Claim.SLOWER  # type: ignore[attr-defined]


@dataclass
class Runtime(Claimed, Record):
    """Eager vs compiled, interleaved and paired (probes/timing.py)."""

    OMIT_NONE = (
        "not_measured",
        "sides_method",
        "samples_per_round",
        "processes",
        "regimes",
        "spread",
        "across_method",
        "prediction_interval",
        "sequence",
        "undecided_why",
        "load",
        "modes",
    )

    # the headline's sides: the cold process's own timing, or where that process was left out of
    # the headline, the processes' it was decided on (`sides_method` says how: claims.
    # headline_sides); `speedup` and `speedup_ci` are across processes (report/processes/), each
    # process's figures in `processes`
    eager: Timing = field(default_factory=Timing)
    compiled: Timing = field(default_factory=Timing)
    sides_method: str | None = None
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    samples: int | None = None
    ci_level: float | None = None
    ci_method: str | None = None
    method: str | None = None
    budget_s: float | None = None
    calls_per_sample: int | None = None
    samples_per_round: int | None = None
    processes: list[ProcessRow] | None = None
    regimes: list[Regime] | None = None
    spread: list[float] | None = None
    across_method: str | None = None
    # what another run of the script may see (nothing decides on it); `speedup_ci` decides
    prediction_interval: list[float] | None = None
    # how many processes timed and why they stopped (processes.sequential.progress, run/launcher.py)
    sequence: Sequence | None = None
    undecided_why: str | None = None  # why the processes cannot decide, whatever the interval
    # the load on the processes decided on, per pair (processes.regimes.under_load)
    load: Load | None = None
    # two modes within a regime (processes.regimes.modes)
    modes: list[ModeRow] | None = None
    warmup_calls: int | None = None
    wall_s: float | None = None
    recompiles_during_timing: int | None = None
    still_compiling: bool | None = None
    raw: dict[str, list[float]] | None = None
    not_measured: str | None = None

    @property
    def ci_low(self) -> float | None:
        return ci_bounds(self.speedup_ci)[0]

    @property
    def ci_high(self) -> float | None:
        return ci_bounds(self.speedup_ci)[1]

    def claim(self, rules: Rules) -> Claim:
        """faster / slower / same / below / undecided, from the decision interval (every allocator
        regime reading the same side when the processes fell in two: processes.claims
        .overall_claim; "same" within the rules' equivalence_margin)."""
        return claims.overall_claim(
            self.speedup_ci,
            self.regimes,
            self.undecided_why,
            rules.min_speedup,
            rules.equivalence_margin,
        )

    @property
    def least_favourable_medians(self) -> tuple[float | None, float | None]:
        """(eager, compiled) medians of the process with the lowest speedup: what per-call gains
        and the break-even are computed from, so a lucky process never shortens them."""
        worst = least_favourable(self.processes or [])
        if worst is None:
            return self.eager.median_s, self.compiled.median_s
        return worst.eager_median_s, worst.compiled_median_s


@dataclass
class Profile(Keyed):
    """The profiler's view of the calls (probes/profile.py): each side's top operators, and per
    profiled compiled call the time inside each compiled region and outside them, each with the
    eager aten work in it (report/break_gain.py). Keyed: the keys the phase gave, in its order."""

    top_ops: dict[str, Any] | None = None
    profiled_call_s: float | None = None
    region_self_s: dict[str, float] | None = None
    outside_regions_s: float | None = None
    region_eager_s: dict[str, float] | None = None
    outside_regions_eager_s: float | None = None
    graph_calls_marked: bool | None = None
    method: str | None = None
    not_measured: str | None = None
