"""Thresholds for `tcdoctor check`: each is a typed `CheckResult` with the figure it was judged on.

Two kinds of check: absolute thresholds on one report (`run_checks`), and regressions of a report
against a baseline report (`baseline_checks`). Every output of `check` (the terminal lines, the JUnit
XML, the GitHub annotations) reads the same `CheckResult`s, so a check is worded once.

Pitfalls: an unmeasured figure fails its check (a gate must not pass on missing evidence); a
regression in speed is a one-sided Welch test on the two reports' per-process speedups, never two
medians or two intervals' overlap (timings on shared machines swing by tens of percent); the cold
compile time is one sample, so `--max-compile-growth` wants a margin; graph breaks are compared by identity (report/diff.py's `break_key`), not by count, so a
break moved from one line to another is one new break, and a model that trades a break for another
fails `--max-new-graph-breaks 0`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .. import stats, units
from .diff import introduced_breaks
from .model import Report
from .runtime_processes import decided_on

CHECK_KEYS = (
    "max_graph_breaks",
    "max_recompiles",
    "min_speedup",
    "max_compile_seconds",
    "max_memory_ratio",
    "require_numerics",
    "require_verdict",
)
BASELINE_KEYS = (
    "max_new_graph_breaks",
    "max_new_recompiles",
    "max_slowdown",
    "max_compile_growth",
)
_ORDER = {"dont-compile": 0, "compile-after-fixes": 1, "compile": 2}


@dataclass(frozen=True)
class CheckResult:
    """One check: what was judged (`figure`, formatted, `units.NA` when missing), against which
    `limit`, whether it passed, and `reason`, the one line that says both (printed after the name)."""

    name: str
    figure: str
    limit: str
    passed: bool
    reason: str


def _judged(name: str, value: Any, bound: Any, le: bool, show: Callable = str) -> CheckResult:
    limit = f"{'≤' if le else '≥'} {bound}"
    if value is None:
        return CheckResult(name, units.NA, limit, False, f"{units.NA}, limit {bound}")
    ok = value <= bound if le else value >= bound
    figure = show(value)
    return CheckResult(name, figure, limit, bool(ok), f"{figure} ({limit} required)")


def run_checks(
    report: Report,
    max_graph_breaks: int | None = None,
    max_recompiles: int | None = None,
    min_speedup: float | None = None,
    max_compile_seconds: float | None = None,
    max_memory_ratio: float | None = None,
    require_numerics: bool = False,
    require_verdict: str | None = None,
    compile_remedies: bool = False,
) -> list[CheckResult]:
    """The thresholds given (None: not checked), in a fixed order; a failed phase always fails.

    `compile_remedies`: --max-compile-seconds judges the best measured way to start (the cold
    whole model, or a remedy tried in a fresh process) and names the one it used."""
    out: list[CheckResult] = []

    def limit(name: str, value: Any, bound: Any, le: bool, show: Callable = str) -> None:
        if bound is not None:
            out.append(_judged(name, value, bound, le, show))

    limit("graph breaks", report.graph_breaks.count, max_graph_breaks, True)
    limit("recompiles", report.recompiles.count, max_recompiles, True)
    limit(
        "speedup (95% CI lower bound)",
        report.runtime.ci_low,
        min_speedup,
        False,
        lambda v: f"{v:.3f}×",
    )
    if compile_remedies and max_compile_seconds is not None:
        out.append(_best_start(report, max_compile_seconds))
    else:
        limit(
            "cold compile seconds", report.compile.cold_s, max_compile_seconds, True, units.seconds
        )
    limit(
        "memory ratio compiled/eager",
        report.memory.ratio,
        max_memory_ratio,
        True,
        lambda v: f"{v:.2f}",
    )
    if require_numerics:
        out.append(_numerics(report))
    if require_verdict:
        d = report.verdict.decision
        out.append(
            CheckResult(
                "verdict",
                str(d),
                f"at least {require_verdict}",
                d is not None and _ORDER.get(d, -1) >= _ORDER[require_verdict],
                f"{d} (at least {require_verdict} required)",
            )
        )
    if report.errors:
        out.append(
            CheckResult(
                "analysis complete",
                f"{len(report.errors)} phase(s) failed",
                "no failed phase",
                False,
                "; ".join(f"{e['phase']}: {e['message']}" for e in report.errors),
            )
        )
    return out


def _numerics(report: Report) -> CheckResult:
    p = report.numerics.passed
    figure = units.numerics_status(p)
    reason = figure
    if p is False:
        reason += f" (max abs err {units.sci(report.numerics.max_abs_err)})"
    elif p is None and report.numerics.not_measured:
        reason += f" ({report.numerics.not_measured})"
    return CheckResult("numerics", figure, "pass", p is True, reason)


def _best_start(report: Report, bound: float) -> CheckResult:
    """The first call of the best measured way to start a fresh machine: the whole model cold or
    a remedy (its artifacts' load included), numerics not failing; says which it used."""
    rem = report.compile.remedies
    rows = [r for r in (rem.measured if rem else []) if r.numerics_passed is not False]
    ways = [("the whole model, cold", report.compile.cold_s)] + [
        (r.title, r.startup_s) for r in rows
    ]
    ways = [(label, s) for label, s in ways if s is not None]
    name, limit = "first call, best measured remedy", f"≤ {bound}"
    if not ways:
        return CheckResult(name, units.NA, limit, False, f"{units.NA}, limit {bound}")
    label, value = min(ways, key=lambda w: w[1])
    why = (
        f"; no remedy measured ({'; '.join(str(n.get('why')) for n in rem.not_tried[:2])})"
        if rem and not rows and rem.not_tried
        else ("; no remedy measured" if not rows else "")
    )
    figure = units.seconds(value)
    return CheckResult(
        name, figure, limit, value <= bound, f"{figure} with {label} ({limit} required){why}"
    )


# Regressions against a baseline report (`check --baseline old.json`).


def baseline_checks(
    new: Report,
    old: Report,
    max_new_graph_breaks: int | None = None,
    max_new_recompiles: int | None = None,
    max_slowdown: float | None = None,
    max_compile_growth: float | None = None,
) -> list[CheckResult]:
    """`new` judged against `old`, one result per limit given (None: not checked)."""
    out = []
    if max_new_graph_breaks is not None:
        out.append(_new_breaks(new, old, max_new_graph_breaks))
    if max_new_recompiles is not None:
        out.append(_new_recompiles(new, old, max_new_recompiles))
    if max_slowdown is not None:
        out.append(_slowdown(new, old, max_slowdown))
    if max_compile_growth is not None:
        out.append(_compile_growth(new, old, max_compile_growth))
    return out


def _missing(name: str, limit: str, new: Any, old: Any) -> CheckResult | None:
    """A failed result when either report lacks the figure (the baseline's absence named)."""
    if new is not None and old is not None:
        return None
    which = "in the baseline" if old is None else "in the new report"
    return CheckResult(name, units.NA, limit, False, f"{units.NA} {which}, limit {limit}")


def _new_breaks(new: Report, old: Report, bound: int) -> CheckResult:
    name, limit = "new graph breaks (vs baseline)", f"≤ {bound} new"
    missing = _missing(name, limit, new.graph_breaks.count, old.graph_breaks.count)
    if missing:
        return missing
    introduced = introduced_breaks(old, new)
    figure = f"{len(introduced)} new"
    shown = "; ".join(f"{b.where} {b.reason}" for b in introduced[:3])
    more = f"; and {len(introduced) - 3} more" if len(introduced) > 3 else ""
    reason = f"{figure} ({limit} required)" + (f": {shown}{more}" if shown else "")
    return CheckResult(name, figure, limit, len(introduced) <= bound, reason)


def _new_recompiles(new: Report, old: Report, bound: int) -> CheckResult:
    name, limit = "new recompiles (vs baseline)", f"≤ +{bound}"
    a, b = old.recompiles.count, new.recompiles.count
    missing = _missing(name, limit, b, a)
    if missing:
        return missing
    figure = f"{b - a:+d} ({a} → {b})"
    return CheckResult(name, figure, limit, b - a <= bound, f"{figure} ({limit} required)")


def _slowdown(new: Report, old: Report, pct: float) -> CheckResult:
    """A one-sided Welch test on the two reports' per-process log speedups (the processes each
    headline was decided on): fails when the new speedup is shown slower than the baseline's by
    more than `pct` (the upper 95% confidence bound of new/old below 1 − pct/100). At a true
    slowdown of exactly `pct` it fails 5% of the time; beyond, more often (tests/test_gate.py).
    Reports with fewer than two processes each are judged on their intervals: the new one's upper
    bound under (1 − pct/100) × the baseline's lower bound."""
    name, limit = "slowdown (vs baseline)", f"≤ {pct:g}% slower"
    a, b = new.runtime, old.runtime
    missing = _missing(name, limit, a.speedup, b.speedup)
    if missing:
        return missing
    xs = [r["speedup"] for r in decided_on(a.processes)]
    ys = [r["speedup"] for r in decided_on(b.processes)]
    if len(xs) < 2 or len(ys) < 2:
        return _slowdown_by_intervals(new, old, pct)
    change, upper, lo, hi = stats.welch_log_ratio(xs, ys)
    figure = f"{change - 1:+.1%} (95% CI {lo - 1:+.1%} to {hi - 1:+.1%})"
    counts = (
        f"; note: {len(xs)} processes against the baseline's {len(ys)}"
        if len(xs) != len(ys)
        else ""
    )
    passed = upper >= 1 - pct / 100
    reason = (
        f"{figure}: new {units.ratio(a.speedup)}, baseline {units.ratio(b.speedup)}, one-sided "
        f"Welch test on {len(xs)} + {len(ys)} processes' log speedups ({limit} required){counts}"
    )
    return CheckResult(name, figure, limit, passed, reason)


def _slowdown_by_intervals(new: Report, old: Report, pct: float) -> CheckResult:
    name, limit = "slowdown (vs baseline)", f"≤ {pct:g}% slower"
    a, b = new.runtime, old.runtime
    missing = _missing(name, limit, a.ci_high, b.ci_low)
    if missing:
        return missing
    cis = f"new {units.ci(a.speedup_ci)}×, baseline {units.ci(b.speedup_ci)}×"
    gap = 1 - a.ci_high / b.ci_low if b.ci_low else 0.0  # the least slowdown both CIs allow
    figure = f"at least {units.percent(gap)} slower" if gap > 0 else "not shown slower"
    passed = a.ci_high >= (1 - pct / 100) * b.ci_low
    why = "fewer than two processes in a report: judged on the two intervals"
    return CheckResult(name, figure, limit, passed, f"{figure} ({cis}; {limit} required; {why})")


def _compile_growth(new: Report, old: Report, pct: float) -> CheckResult:
    name, limit = "cold compile growth (vs baseline)", f"≤ +{pct:g}%"
    a, b = old.compile.cold_s, new.compile.cold_s
    missing = _missing(name, limit, b, a)
    if missing:
        return missing
    growth = b / a - 1 if a else 0.0
    figure = f"{growth:+.0%} ({units.seconds(a)} → {units.seconds(b)})"
    passed = b <= a * (1 + pct / 100)
    return CheckResult(name, figure, limit, passed, f"{figure} ({limit} required)")


ENVIRONMENT_KEYS = ("torch", "device", "device_name", "threads")


def environment_differences(new: Report, old: Report) -> str | None:
    """One line naming what differs between the two reports' environments (torch version, device,
    threads), or None: the comparison still runs, but the reader should know."""
    diffs = [
        f"{k} {old.environment.get(k)} → {new.environment.get(k)}"
        for k in ENVIRONMENT_KEYS
        if old.environment.get(k) != new.environment.get(k)
    ]
    if not diffs:
        return None
    return "note: the baseline was measured in another environment: " + "; ".join(diffs)
