"""Regressions of a report against a baseline report (`check --baseline old.json`; `tcdoctor diff`
judges its regressions by the same code, checks/table.py's `regressions`): each the `judge` of a
baseline `Check` in the gate's table, returning `CheckResult`s (checks/outcome.py); and what makes
a baseline another measurement (`baseline_mismatch`, `environment_differences`).

Pitfalls: a regression in speed is a one-sided Welch test on the two reports' per-process speedups,
never two medians or two intervals' overlap (timings on shared machines swing by tens of percent),
printed with the one-sided bound it was judged on and that bound's level (the new run's per-look
level: `check TARGET` adds processes while the comparison is undecided, checks/questions.py's
`SlowdownQuestion`), compared within allocator regime (report/processes/claims.py's
`compare_processes`: a changed regime mix is inconclusive, never a regression), and told apart
from the compiled time itself getting slower (`_compiled_slower`, where device, torch and threads
match: "compiled got slower" is not "compile's advantage shrank", which an eager improvement
alone also causes); the cold compile time is one sample, so
`--max-compile-growth` wants a margin; graph breaks are compared by identity (report/diff.py's
`break_key`), not by count, so a break moved from one line to another is one new break, and a
model that trades a break for another fails `--max-new-graph-breaks 0`.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import units
from ..outcomes import Status
from ..report.processes.claims import Comparison, compare_processes, speedup_of
from ..report.processes.regimes import decided_on
from ..report.processes.rows import ProcessRow, Sequence
from ..report.processes.sequential import small_baseline_why
from .outcome import CheckResult, error_result, level_text

if TYPE_CHECKING:  # the table is read where `check` is built: the report classes load on use
    from ..report.model import Report


def _missing(name: str, limit: str, new: Any, old: Any) -> CheckResult | None:
    """When either report lacks the figure: a failed result for the new report's (an unmeasured
    figure fails), an error result for the baseline's (it cannot be judged against)."""
    if new is not None and old is not None:
        return None
    if old is None:
        return error_result(name, f"{units.NA} in the baseline, limit {limit}")
    return CheckResult(name, units.NA, limit, False, f"{units.NA} in the new report, limit {limit}")


def new_breaks(new: Report, old: Report, bound: int) -> CheckResult:
    name, limit = "new graph breaks (vs baseline)", f"≤ {bound} new"
    if missing := _missing(name, limit, new.graph_breaks.count, old.graph_breaks.count):
        return missing
    from ..report.diff import introduced_breaks

    introduced = introduced_breaks(old, new)
    figure = f"{len(introduced)} new"
    shown = "; ".join(f"{b.where} {b.reason}" for b in introduced[:3])
    more = f"; and {len(introduced) - 3} more" if len(introduced) > 3 else ""
    reason = f"{figure} ({limit} required)" + (f": {shown}{more}" if shown else "")
    return CheckResult(name, figure, limit, len(introduced) <= bound, reason)


def new_recompiles(new: Report, old: Report, bound: int) -> CheckResult:
    name, limit = "new recompiles (vs baseline)", f"≤ +{bound}"
    a, b = old.recompiles.count, new.recompiles.count
    if missing := _missing(name, limit, b, a):
        return missing
    figure = f"{b - a:+d} ({a} → {b})"
    return CheckResult(name, figure, limit, b - a <= bound, f"{figure} ({limit} required)")


def slowdown(new: Report, old: Report, pct: float, three: bool = True) -> CheckResult:
    """Has compile's advantage shrunk by more than `pct`? One-sided Welch tests on the two
    reports' per-process log speedups (the processes each headline was decided on), within each
    allocator regime both reports have at least two processes of (`compare_processes`): fails when
    new/old is shown below 1 − pct/100 (its one-sided upper bound below it), passes when shown at or
    above it (its one-sided lower bound), inconclusive between. The bound printed is the one tested,
    at its level (`slowdown_level`: the new run's per-look level, its processes having been added
    while the question was undecided). `three=False` (`tcdoctor diff`'s "shown slower at all"):
    passes whenever it does not fail. Reports with fewer than two processes each are judged on
    their intervals (`_slowdown_by_intervals`)."""
    name, limit = "slowdown (vs baseline)", f"≤ {pct:g}% slower"
    a, b = new.runtime, old.runtime
    if missing := _missing(name, limit, a.speedup, b.speedup):
        return missing
    xs, ys = decided_on(a.processes), decided_on(b.processes)
    if len(xs) < 2 or len(ys) < 2:
        return _slowdown_by_intervals(new, old, pct, three)
    shown = f"new {units.ratio(a.speedup)}, baseline {units.ratio(b.speedup)}"
    cmp = compare_processes(xs, ys, speedup_of, pct, slowdown_level(new), three)
    result = _compared(name, limit, cmp, pct, SPEEDUP_WORDS, shown, new)
    small = small_baseline_why(len(ys)) if result.inconclusive else ""
    return replace(result, reason=f"{result.reason}; {small}") if small else result


def _compiled_slower(new: Report, old: Report, pct: float) -> CheckResult | None:
    """Did compiled itself get slower by more than `pct`? The same one-sided Welch tests on the
    processes' log compiled speeds (1 / compiled median), within regime; judged only where the two
    reports' device, torch version and threads are known and equal (else the time is another
    machine's) and both have at least two processes decided on. None where not judged."""
    env_new, env_old = new.environment or {}, old.environment or {}
    if any(env_new.get(k) is None or env_new.get(k) != env_old.get(k) for k in SAME_MACHINE_KEYS):
        return None
    xs = [r for r in decided_on(new.runtime.processes) if r.compiled_median_s]
    ys = [r for r in decided_on(old.runtime.processes) if r.compiled_median_s]
    if len(xs) < 2 or len(ys) < 2:
        return None
    name, limit = "compiled time (vs baseline)", f"≤ {pct:g}% slower"
    per_call = (
        f"compiled per call {units.seconds(statistics.median(r.compiled_median_s for r in xs))}"
        f" against {units.seconds(statistics.median(r.compiled_median_s for r in ys))} "
        "(the processes' medians)"
    )
    cmp = compare_processes(xs, ys, _compiled_speed, pct, slowdown_level(new), True)
    return _compared(name, limit, cmp, pct, COMPILED_WORDS, per_call, new)


# (failed, passed, inconclusive, not shown (tcdoctor diff's pass), measure) for each regression
# check's reason
SPEEDUP_WORDS = (
    "compile's advantage shrank",
    "compile's advantage did not shrink",
    "compile's advantage: can't tell whether it shrank",
    "compile's advantage not shown to shrink",
    "log speedups",
)
COMPILED_WORDS = (
    "compiled got slower",
    "compiled did not get slower",
    "compiled: can't tell whether it got slower",
    "compiled not shown slower",
    "log compiled speeds (1 / compiled median)",
)
# what must match for compiled times of two reports to be compared (the same machine's times)
SAME_MACHINE_KEYS = ("device", "torch", "threads")


def _compiled_speed(r: ProcessRow) -> float:
    return 1.0 / r.compiled_median_s


def slowdown_level(new: Report) -> float:
    """The one-sided level of the regression bounds: the new run's per-look level when its
    processes were added one look at a time (Pocock's, `runtime.ci_level`: the loop looked at the
    question after each process, so each look is held to it), else 95%."""
    seq = new.runtime.sequence
    level = new.runtime.ci_level
    return level if level and seq and (seq.looks or 1) > 1 else 0.95


def _bound(cmp: Comparison, part: tuple, margin: float) -> str:
    """'-24.6% (one-sided 98.1% upper bound -18.2%)': the change and the bound it was judged on."""
    g, change, lower, upper, _, _ = part
    lv = f"one-sided {level_text(cmp.level)}"
    if upper < margin or not cmp.three:
        b = f"{lv} upper bound {upper - 1:+.1%}"
    elif lower >= margin:
        b = f"{lv} lower bound {lower - 1:+.1%}"
    else:
        b = f"{lv} bounds {lower - 1:+.1%} and {upper - 1:+.1%}"
    return f"{g + ': ' if g else ''}{change - 1:+.1%} ({b})"


def _stopped(new: Report) -> str:
    """Why the new run timed no more processes, for an inconclusive regression."""
    seq = new.runtime.sequence or Sequence()
    return {
        "cap": f"; the new run reached its cap (--processes {seq.cap})",
        "budget": "; the new run's time budget ran out before its cap",
        "decided": "; the new run stopped once its questions were answered",
    }.get(seq.stopped or "", "")


def _compared(
    name: str,
    limit: str,
    cmp: Comparison,
    pct: float,
    words: tuple[str, str, str, str, str],
    shown: str,
    new: Report,
) -> CheckResult:
    """A regression check's result from its comparison, worded by `words` (SPEEDUP_WORDS,
    COMPILED_WORDS): the figure is the change with the bound tested and its level, per regime."""
    failed, passed, unsure, not_shown, measure = words
    by = f" by more than {pct:g}%" if pct else ""
    if not cmp.parts:
        reason = f"{unsure}{by}: {cmp.left_out}; {shown}"
        return CheckResult(name, "not compared", limit, False, reason, inconclusive=True)
    margin = 1 - pct / 100
    figure = "; ".join(_bound(cmp, p, margin) for p in cmp.parts)
    n = " and ".join(f"{p[4]} + {p[5]}" for p in cmp.parts)
    tests = "tests" if len(cmp.parts) > 1 else "test"
    how = (
        f"one-sided Welch {tests} on {n} processes' {measure} (new + baseline"
        + (", within each allocator regime" if cmp.parts[0][0] else "")
        + ")"
    )
    regimes = f"; {cmp.left_out}" if cmp.left_out else ""
    if cmp.outcome == Status.INCONCLUSIVE:
        reason = (
            f"{unsure}{by}: {figure} straddle {-pct:g}% ({how}{_stopped(new)}): {shown}{regimes}"
        )
        return CheckResult(name, figure, limit, False, reason, inconclusive=True)
    word = failed if cmp.outcome == Status.FAIL else (passed if cmp.three else not_shown)
    reason = f"{word}{by}: {figure} ({limit} required; {how}): {shown}{regimes}"
    return CheckResult(name, figure, limit, cmp.outcome == Status.PASS, reason)


def _slowdown_by_intervals(new: Report, old: Report, pct: float, three: bool = True) -> CheckResult:
    """Fewer than two processes in a report: fails when the new interval's upper bound is under
    (1 − pct/100) × the baseline's lower bound, passes when its lower bound is at or above
    (1 − pct/100) × the baseline's upper bound, inconclusive between (`three`)."""
    name, limit = "slowdown (vs baseline)", f"≤ {pct:g}% slower"
    a, b = new.runtime, old.runtime
    if missing := _missing(name, limit, a.ci_high, b.ci_low):
        return missing
    cis = f"new {units.ci(a.speedup_ci)}×, baseline {units.ci(b.speedup_ci)}×"
    gap = 1 - a.ci_high / b.ci_low if b.ci_low else 0.0  # the least slowdown both CIs allow
    figure = f"at least {units.percent(gap)} slower" if gap > 0 else "not shown slower"
    margin = 1 - pct / 100
    passed = a.ci_high >= margin * b.ci_low
    why = "fewer than two processes in a report: judged on the two intervals"
    within = a.ci_low is not None and b.ci_high is not None and a.ci_low >= margin * b.ci_high
    if three and passed and not within:
        figure = f"{figure}, not shown within {pct:g}%"
        reason = f"{figure}: the two intervals straddle {-pct:g}% ({cis}; {limit} required; {why})"
        return CheckResult(name, figure, limit, False, reason, inconclusive=True)
    return CheckResult(name, figure, limit, passed, f"{figure} ({cis}; {limit} required; {why})")


def compile_growth(new: Report, old: Report, pct: float) -> CheckResult:
    name, limit = "cold compile growth (vs baseline)", f"≤ +{pct:g}%"
    a, b = old.compile.cold_s, new.compile.cold_s
    if missing := _missing(name, limit, b, a):
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


def _target_parts(target: str | None) -> tuple[list[str], str]:
    path, _, func = (target or "").rpartition(":")
    parts = [p for p in path.replace("\\", "/").split("/") if p and p != "."]
    return parts, func


def same_target(a: str | None, b: str | None) -> bool:
    """The same `path.py:function` on another checkout: the same function, and the shorter path's
    parts the tail of the longer's (`models/m.py` is `/home/runner/work/p/p/models/m.py`)."""
    (pa, fa), (pb, fb) = _target_parts(a), _target_parts(b)
    if fa != fb or not pa or not pb:
        return fa == fb and pa == pb
    n = min(len(pa), len(pb))
    return pa[-n:] == pb[-n:]


def _mode(m: Any) -> Any:
    return "default" if m in (None, "default") else m


def baseline_mismatch(
    old: Report,
    target: str | None = None,
    options: dict[str, Any] | None = None,
    device: str | None = None,
) -> list[str]:
    """What makes `old` another measurement than the one judged against it, one phrase each
    ("target a.py:f → b.py:f"): the target, the backend, the mode or the device. A value not given
    (None) is not compared (the device is known only once the analysis ran)."""
    out = []
    if target is not None and not same_target(old.target, target):
        out.append(f"target {old.target} → {target}")
    old_opts = old.options or {}
    if options is not None:
        if old_opts.get("backend") != options.get("backend"):
            out.append(f"backend {old_opts.get('backend')} → {options.get('backend')}")
        if _mode(old_opts.get("mode")) != _mode(options.get("mode")):
            out.append(f"mode {_mode(old_opts.get('mode'))} → {_mode(options.get('mode'))}")
    old_device = old.environment.get("device")
    if device is not None and old_device != device:
        out.append(f"device {old_device} → {device}")
    return out


def slowdowns(new: Report, old: Report, pct: float) -> list[CheckResult]:
    """--max-slowdown: compile's advantage (`slowdown`), then compiled itself where comparable
    (`_compiled_slower`)."""
    r = slowdown(new, old, pct)
    c = None if r.error else _compiled_slower(new, old, pct)
    return [r] + ([c] if c is not None else [])
