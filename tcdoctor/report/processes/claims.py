"""What the processes say of compiled against eager: the headline's figures joined from each
process's row (`combine`), the claim its decision interval makes (`claim`, `equivalent`), and a
regression's comparison of two runs' processes (`compare_processes`). Part of the across-process
speedup (report/processes/: regimes.py, claims.py here, sequential.py).

Method. The processes the headline is decided on are those launched as the user launches the
script and not disturbed (regimes.classify):

- **Decision interval** (`speedup_ci`): a confidence interval of the typical process's speedup,
  the geometric mean (Student's t on the processes' log speedups, n − 1 degrees of freedom, never
  narrower than the processes' own paired noise with the normal quantile: that noise is known from
  hundreds of pairs, stats.known_floor_half_width), per allocator regime (regimes.py); the
  envelope of the regimes' intervals. The verdict, `check --min-speedup` and the break-even decide
  on it (`claim`); where the processes fell in regimes, the headline claims the side every regime
  reads, a regime of one process by its own interval, at least one regime deciding on its own
  processes (`overall_claim`); regimes that read different sides are undecided.
- **The words are one enum** (`Claim`): FASTER, SLOWER, SAME, BELOW, UNDECIDED; a member equals
  its word, so a saved report's strings and older callers compare as before.
- **Prediction interval** (`prediction_interval`): where one more process of the script may land
  (stats.prediction_interval, √(n + 1) times wider), widened to hold every process's own paired
  interval. Shown, labelled as such; nothing decides on it.
- **"The same" is an equivalence answer** (`claim`, `equivalent`): two one-sided tests at
  the rules' equivalence_margin (thresholds.Rules, ±10%): the decision interval within
  [1/margin, margin] is "no difference that matters (±10%)"; the band is the margin, never
  min_speedup. An interval wholly above 1 and below min_speedup (where min_speedup exceeds the
  margin) is 'below': faster than eager, not by the bar.
- **A regression is a Welch comparison** (`compare_processes`, check --max-slowdown): the two
  runs' per-process values within allocator regime, one-sided bounds at the new run's per-look
  level.

Pitfalls. Few processes know the spread poorly: with three, t(2) at Pocock's level is 7.3, so a
model whose processes disagree by 10% needs more processes to decide, honestly. One process
(`--processes 1`, the in-process API) gives that process's own interval, and the report says it
does not cover process-to-process spread.

Torch-free: assembled in the parent, re-read by `tcdoctor report`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ... import stats, units
from ...outcomes import Status, StrEnum
from ...thresholds import RULES
from ..rules import faster_than_eager, slower_than_eager
from .regimes import (
    HEAVY_FAULTS_PER_CALL,
    MIN_PER_REGIME,
    by_regime,
    classify,
    decided_on,
    load_seen,
    modes,
    modes_text,
    own_envelope,
    regime_figures,
    regime_intervals,
    row,
    under_load,
)
from .rows import ModeRow, ProcessRow, Regime, Row
from .rows import Sequence as SequenceRecord

# The chance, over all looks, that the sequence claims a side when the speedup sits on a threshold
# (sequential.look_level holds every look to it).
ALPHA = 0.05


class Claim(StrEnum):
    """Where a decision interval puts compiled against eager (`claim`): a member is its word, so
    a claim compares equal to the string a saved report or an older caller holds."""

    FASTER = "faster"  # low end at or above min_speedup
    SLOWER = "slower"  # high end below 1
    SAME = "same"  # within the equivalence margin: no difference that matters
    BELOW = "below"  # faster than eager, but wholly below min_speedup (above the margin)
    UNDECIDED = "undecided"  # the interval straddles a threshold

    @property
    def sided(self) -> bool:
        """A side of eager: faster or slower."""
        return self in (Claim.FASTER, Claim.SLOWER)


def claim(
    ci: Sequence[float] | None, min_speedup: float, margin: float = RULES.equivalence_margin
) -> Claim:
    """Where a decision interval puts compiled against eager: FASTER (low ≥ min_speedup), SLOWER
    (high < 1), SAME (`equivalent`: within [1/margin, margin], no difference that matters), BELOW
    (faster than eager but wholly below min_speedup, a difference that matters: only where
    min_speedup exceeds the margin), or UNDECIDED (the interval straddles a threshold). The band is
    the equivalence margin, never min_speedup."""
    if not ci or ci[0] is None or ci[1] is None:
        return Claim.UNDECIDED
    lo, hi = ci
    if faster_than_eager(lo, min_speedup):
        return Claim.FASTER
    if slower_than_eager(hi):
        return Claim.SLOWER
    if equivalent(ci, margin):
        return Claim.SAME
    if lo >= 1 and hi < min_speedup:
        return Claim.BELOW
    return Claim.UNDECIDED


def apart(a: Sequence[float] | None, b: Sequence[float] | None) -> Claim | None:
    """Two speedup intervals, wholly apart: Claim.FASTER where `a` lies wholly above `b` (a
    speedup, so higher is faster), Claim.SLOWER wholly below, None where they overlap or either is
    missing. The one test of "did it change" between two intervals: a fix against without it
    (experiments/fixes.py), a sweep's target against its baseline (sweep/compare.py)."""
    if not a or not b or None in (a[0], a[1], b[0], b[1]):
        return None
    return Claim.FASTER if a[0] > b[1] else Claim.SLOWER if a[1] < b[0] else None


def equivalent(ci: Sequence[float] | None, margin: float = RULES.equivalence_margin) -> bool:
    """Two one-sided tests (TOST) on the decision interval: its low end at or above 1/margin and
    its high end at or below margin, so compiled is neither more than `margin` slower nor more than
    `margin` faster. Each end of the two-sided interval at level L is a one-sided test at (1 − L)/2:
    at Pocock's level for the looks (ALPHA over all), each side errs at most ALPHA/2 (a conservative
    TOST: the (1 − 2α) interval with α = 2.5%)."""
    return (
        bool(ci)
        and ci[0] is not None
        and ci[1] is not None
        and (ci[0] >= 1 / margin and ci[1] <= margin)
    )


def no_difference_text(ci: Sequence[float] | None, margin: float = RULES.equivalence_margin) -> str:
    """What an interval says of a difference: 'no difference that matters (±10%)' when it lies
    within the margin; 'no difference larger than 0.93–1.12×' when it holds 1 but reaches past the
    margin (no side shown, and no equivalence either); '' otherwise."""
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    if equivalent(ci, margin):
        return f"no difference that matters (±{units.percent(margin - 1)})"
    if ci[0] <= 1 <= ci[1]:
        return f"no difference larger than {ci[0]:.2f}–{ci[1]:.2f}×"
    return ""


def answers(ci: Sequence[float] | None, threshold: float) -> bool:
    """The interval lies wholly on one side of `threshold` (at or above, or below)."""
    return bool(ci) and ci[0] is not None and (ci[0] >= threshold or ci[1] < threshold)


def regime_claim(
    group: Regime, min_speedup: float, margin: float = RULES.equivalence_margin
) -> Claim:
    """One regime's `claim` on its own decision interval (UNDECIDED where the regime has too few
    processes of its own to decide: `regime_reading` says what its processes read)."""
    group = Regime.of(group)
    if not group.is_decided:
        return Claim.UNDECIDED
    return claim(group.speedup_ci, min_speedup, margin)


def regime_reading(
    group: Regime, min_speedup: float, margin: float = RULES.equivalence_margin
) -> Claim:
    """The side a regime reads: its `regime_claim` where it decides; where it has one process of
    its own, the side that process's own paired interval lies on (FASTER or SLOWER; UNDECIDED for
    anything else: its own interval does not cover the spread between processes, so it shows a
    side or nothing, never "the same")."""
    group = Regime.of(group)
    if group.is_decided:
        return regime_claim(group, min_speedup, margin)
    own = claim(group.speedup_ci, min_speedup, margin)
    return own if own.sided else Claim.UNDECIDED


def overall_claim(
    ci: Sequence[float] | None,
    regimes: Sequence[Regime] | None,
    undecided_why: str | None,
    min_speedup: float,
    margin: float = RULES.equivalence_margin,
) -> Claim:
    """The headline's claim; UNDECIDED when the processes cannot decide (`undecided_why`). When
    they fell in allocator regimes, the side every regime reads (`regime_reading`: a regime of one
    process by its own interval), provided one regime at least decides on its own processes and
    the headline's interval decides the same (`claim`); regimes that read different sides, or none,
    are UNDECIDED. The recipe case: six processes at 1.44-3.08x, the page-faulting regime's interval
    1.22-3.67, the one process that did not fault 1.45x (its own 1.42-1.47): faster in both."""
    if undecided_why:
        return Claim.UNDECIDED
    whole = claim(ci, min_speedup, margin)
    if not regimes:
        return whole
    typed = [Regime.of(g) for g in regimes]
    readings = {regime_reading(g, min_speedup, margin) for g in typed}
    decides = any(g.is_decided for g in typed)
    return whole if decides and readings == {whole} else Claim.UNDECIDED


def lone_regimes_text(regimes: Sequence[Regime] | None) -> str:
    """'one process in the not page-faulting regime (third): a regime is decided on at least 2 of
    its own processes, never on another regime's spread' for the regimes too small to decide on
    their own ('' when none)."""
    lone = [Regime.of(g) for g in regimes or []]
    lone = [g for g in lone if not g.is_decided]
    if not lone:
        return ""
    return (
        "; ".join(f"one process in the {g.regime} regime ({', '.join(g.processes)})" for g in lone)
        + f": a regime is decided on at least {MIN_PER_REGIME} of its own processes, never on "
        "another regime's spread"
    )


def combine(processes: list[tuple[str, str, dict]], seq: dict | None = None) -> dict[str, Any]:
    """The across-process figures from (name, env, timing result) of each timed process, as the
    runtime section's JSON: `speedup`, `speedup_ci` (the decision interval), `prediction_interval`,
    `processes`, `regimes` (when they differ), `spread`, `sequence`, `across_method`,
    `ci_method`."""
    rows = [row(n, e, r) for n, e, r in processes if r.get("speedup") and r.get("speedup_ci")]
    counted = classify(rows) or [r for r in rows if not r.probe] or rows
    speeds = [r.speedup for r in counted]
    sequence = SequenceRecord.from_dict(dict(seq, counted=len(counted))) if seq else None
    level = (sequence.level if sequence else None) or 0.95
    out: dict[str, Any] = {"processes": rows, "spread": [min(speeds), max(speeds)]}
    why: list[str] = []  # why the processes cannot decide, whatever the interval says
    load = under_load(counted)
    if load:
        out["load"] = load
        if load.sustained:
            why.append(load.text)
    by: dict[str | None, list[ProcessRow]] = {}
    if len(counted) == 1:
        out["speedup"], out["speedup_ci"] = speeds[0], list(counted[0].speedup_ci)
    else:
        by = by_regime(counted)
        out.update(_across(by, counted, level))
        regs: list[Regime] = out.get("regimes") or []
        if regs and not any(g.is_decided for g in regs):  # no regime decides on its own
            why.append(lone_regimes_text(regs))
    if why:
        out["undecided_why"] = "; ".join(why)
    if len(counted) > 1:  # the level the decision interval was taken at (Pocock's, per look)
        out["ci_level"] = level
    if sequence:
        out["sequence"] = sequence
    out["across_method"] = _method(rows, counted, out.get("regimes"), sequence)
    out["ci_method"] = _ci_method(out, by, counted, level, sequence)
    out.update(headline_sides(processes, rows))
    return {k: _json(v) for k, v in out.items()}


def headline_sides(processes: list[tuple[str, str, dict]], rows: list[ProcessRow]) -> dict:
    """The headline's eager and compiled figures per call (`eager`, `compiled`, `sides_method`)
    where they are not the cold process's own; {} where they are.

    The runtime section starts from the cold process's timing. Where that process was left out of
    the headline (disturbed, or timed unlike the timing-only processes), its figures are not what
    the headline was decided on: one fact, the eager median, would read one figure in the report
    and another in the JSON that `diff`, the sweep and CI jobs read. So the sides become those of
    the processes decided on: each figure the median over them of each process's own (samples,
    their sum); the cold process's own medians stay on its process row."""
    cold = next((r for r in rows if r.process == "cold"), None)
    on = decided_on(rows)
    if cold is None or not cold.excluded or not on:
        return {}
    names = {r.process for r in on}
    results = [result for name, _, result in processes if name in names]
    return {
        "eager": _typical([r.get("eager") or {} for r in results]),
        "compiled": _typical([r.get("compiled") or {} for r in results]),
        "sides_method": (
            f"the median over the {len(on)} process(es) the headline was decided on "
            f"({', '.join(r.process for r in on)}) of each one's own figure (samples: their sum); "
            "the cold process was left out of the headline: its own medians are on its process row"
        ),
    }


def _typical(sides: list[dict]) -> dict:
    """Each figure of one side: the median over the processes' own (None where none measured
    it); the samples, their sum."""
    import statistics

    out: dict = {}
    for key in dict.fromkeys(k for side in sides for k in side):
        got = [v for side in sides if isinstance(v := side.get(key), (int, float))]
        if key == "samples":
            out[key] = sum(got) if got else None
        else:
            out[key] = statistics.median(got) if got else None
    return out


def _json(value: Any) -> Any:
    """A record (or a list of them) as its JSON; anything else as it is."""
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value.to_dict() if isinstance(value, Row) else value


def _across(
    by: dict[str | None, list[ProcessRow]], counted: list[ProcessRow], level: float
) -> dict[str, Any]:
    """Two or more processes: the geometric-mean speedup, the decision interval (the envelope of
    the regimes' own; a regime too small to decide shows its processes' own intervals), the
    regimes when they differ, two modes within a regime, the prediction interval."""
    speeds = [r.speedup for r in counted]
    cis = regime_intervals(by, level)
    out: dict[str, Any] = {"speedup": stats.geometric_mean(speeds)}
    if len(by) > 1:
        out["regimes"] = regime_figures(by, cis)
    shown = [ci or own_envelope(by[g]) for g, ci in cis.items()]
    out["speedup_ci"] = [min(c[0] for c in shown), max(c[1] for c in shown)]
    found = [
        ModeRow(regime=g if len(by) > 1 else None, modes=m)
        for g, rs in by.items()
        if (m := modes(rs))
    ]
    if found:
        out["modes"] = found
    _, lo, hi = stats.prediction_interval(speeds)
    # another run may land where a seen one did, with its own noise, and anywhere the typical
    # speedup may be
    out["prediction_interval"] = [
        min(lo, out["speedup_ci"][0], *(r.speedup_ci[0] for r in counted)),
        max(hi, out["speedup_ci"][1], *(r.speedup_ci[1] for r in counted)),
    ]
    return out


def _ci_method(
    out: dict[str, Any],
    by: dict[str | None, list[ProcessRow]],
    counted: list[ProcessRow],
    level: float,
    seq: SequenceRecord | None,
) -> str:
    if len(counted) <= 1:
        return "percentile bootstrap over one process's paired rounds, 1000 resamples"
    return (
        f"{level:.1%} confidence interval of the typical (geometric-mean) speedup of {len(counted)} "
        f"processes (log scale, Student's t, {_df(by)} degree(s) of freedom, the normal quantile "
        "for the processes' own paired noise where that is wider"
        + (
            ", spread pooled within allocator regimes, each regime decided on its own processes"
            if out.get("regimes")
            else ""
        )
        + (
            f"; Pocock's level for looks at {_looks_text(seq)} processes, {1 - ALPHA:.0%} over all"
            if seq and (seq.looks or 1) > 1
            else ""
        )
        + ")"
        + (f"; {modes_text(out['modes'])}" if out.get("modes") else "")
    )


def _df(by: dict[str | None, list[ProcessRow]]) -> int:
    """Degrees of freedom of the spread pooled within the groups of two or more processes."""
    own = [rs for rs in by.values() if len(rs) >= MIN_PER_REGIME]
    return sum(len(rs) for rs in own) - len(own)


def _looks_text(seq: SequenceRecord) -> str:
    """'3, 4, 5 and 6': the counts the sequence's looks are at, its last `looks` up to its cap,
    one per process (sequential.look_schedule, which imports this module)."""
    cap = seq.cap
    ns = [str(n) for n in range(cap - seq.looks + 1, cap + 1)]  # type: ignore[operator]
    return ns[0] if len(ns) == 1 else ", ".join(ns[:-1]) + " and " + ns[-1]


def _method(
    rows: list[ProcessRow],
    counted: list[ProcessRow],
    regimes: list[Regime] | None,
    seq: SequenceRecord | None,
) -> str:
    n = len(counted)
    if n == 1:
        return (
            f"one process ({counted[0].process}): the interval is that process's paired bootstrap "
            "and does not cover process-to-process spread (time several with --processes)"
        )
    text = (
        f"{n} fresh processes decided on ({', '.join(r.process for r in counted)}), each timing "
        "paired rounds; the speedup is the geometric mean of their figures and the decision rests on "
        "its confidence interval; the prediction interval is what another run of your script may see"
    )
    for r in rows:
        if not any(r is c for c in counted):
            text += f"; {r.process} not decided on ({r.excluded or r.probe})"
    for r in counted:
        if load_seen(r.load):
            text += f"; load seen in the {r.process} process: {units.load(r)}"
    load = under_load(counted)
    if load:
        text += f"; {load.text}"
    if regimes:
        text += (
            f"; the processes fell in two allocator regimes (a side taking ≥ {HEAVY_FAULTS_PER_CALL} "
            "minor page faults per call in one and not in another: glibc's heap history decides), "
            "each decided apart"
        )
        lone = lone_regimes_text(regimes)
        text += f"; {lone}" if lone else ""
    if seq:
        text += f"; {units.stopped(seq)}"
    return text


def speedup_of(r: ProcessRow) -> float:
    """A process row's speedup: what --max-slowdown compares (`compare_processes`'s `value`)."""
    return ProcessRow.of(r).speedup


@dataclass(frozen=True)
class Comparison:
    """One comparison of two reports' processes (`compare_processes`): `outcome` FAIL, PASS or
    INCONCLUSIVE; `parts`: (regime or None, change new/old, one-sided lower, one-sided upper,
    new processes, baseline processes) per regime compared; `level`: each bound's one-sided level;
    `left_out`: why a regime (or every one) was not compared; `three`: an inconclusive outcome
    allowed (else "not shown slower" passes)."""

    outcome: Status
    parts: tuple[tuple[str | None, float, float, float, int, int], ...]
    level: float
    left_out: str = ""
    three: bool = True


def _regimes_text(by: dict[str | None, list[ProcessRow]]) -> str:
    return ", ".join(f"{len(rs)} {g}" for g, rs in by.items())


def compare_processes(
    new: list,
    old: list,
    value: Callable[[ProcessRow], float],
    pct: float,
    level: float,
    three: bool = True,
) -> Comparison:
    """new/old of `value` over two sets of process rows, within allocator regime: one Welch test
    when both sets are one regime (or fault counts are missing on a side), else one per regime both
    sets have at least MIN_PER_REGIME processes in, each at level 1 − (1 − `level`) / k for k
    regimes compared (Bonferroni: together they err no more than one would). Fails when any
    regime's one-sided upper bound lies below 1 − pct/100, passes when every lower bound lies at
    or above it, inconclusive otherwise, and inconclusive (`left_out` says why) when no regime
    has enough processes on both sides: a changed regime mix is not a regression."""
    margin = 1 - pct / 100
    new, old = [ProcessRow.of(r) for r in new], [ProcessRow.of(r) for r in old]
    bn, bo = by_regime(new), by_regime(old)
    if (len(bn) == 1 and len(bo) == 1 and bn.keys() == bo.keys()) or None in bn or None in bo:
        groups: list[tuple[str | None, list[ProcessRow], list[ProcessRow]]] = [(None, new, old)]
        left_out = ""
    else:
        groups = [
            (g, bn[g], bo[g])
            for g in sorted(set(bn) & set(bo))
            if len(bn[g]) >= MIN_PER_REGIME and len(bo[g]) >= MIN_PER_REGIME
        ]
        left_out = (
            f"the processes fell in other allocator regimes (new: {_regimes_text(bn)}; "
            f"baseline: {_regimes_text(bo)}), compared within a regime where both have at least "
            f"{MIN_PER_REGIME} processes"
        )
        if not groups:
            why = f"{left_out}, and none has: not compared (a changed regime is not a regression)"
            return Comparison(Status.INCONCLUSIVE, (), level, why, three)
    each = 1 - (1 - level) / len(groups)
    parts = []
    for g, xs, ys in groups:
        change, upper, _, _ = stats.welch_log_ratio(
            [value(r) for r in xs], [value(r) for r in ys], each
        )
        parts.append((g, change, change * change / upper, upper, len(xs), len(ys)))
    if any(p[3] < margin for p in parts):
        outcome = Status.FAIL
    elif not three or all(p[2] >= margin for p in parts):
        outcome = Status.PASS
    else:
        outcome = Status.INCONCLUSIVE
    return Comparison(outcome, tuple(parts), each, left_out, three)
