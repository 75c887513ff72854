"""Thresholds for `tcdoctor check`: each is a typed `CheckResult` with the figure it was judged on.

Two kinds of check: absolute thresholds on one report (`run_checks`), and regressions of a report
against a baseline report (`baseline_checks`; `tcdoctor diff` judges its regressions by the same
code, `regressions`). Every output of `check` and `check --sweep` (the terminal lines, the JUnit XML,
the GitHub step summary and annotations) reads the same `CheckResult`s, so a check is worded once.

A result is one of four: passed, failed (the figure is outside its limit, or the new report lacks
it), inconclusive (the figure's interval straddles the limit: `--min-speedup X` passes when the lower
bound is ≥ X, fails when the upper bound is < X, and is inconclusive otherwise; `--max-slowdown`
likewise on the two one-sided bounds of the change; `--require-verdict` on a "cant-tell" verdict), or
an error (it could not be judged: a baseline that is incomplete or lacks the figure, a bad command
line, a target that cannot be loaded), which is a tool problem, not a verdict on the model: JUnit
gets an `<error>`, not a `<failure>`, and the gate exits 2 (`gate_exit_code`). An inconclusive check
is a JUnit `<skipped>`, a GitHub warning (not an error), and exits 5 unless `--inconclusive pass`
(exit 0); a failed check anywhere still exits 1. A figure with no interval (a count, the cold
compile time, the memory ratio) is never inconclusive.

Pitfalls: an unmeasured figure fails its check (a gate must not pass on missing evidence); a
regression in speed is a one-sided Welch test on the two reports' per-process speedups, never two
medians or two intervals' overlap (timings on shared machines swing by tens of percent); the cold
compile time is one sample, so `--max-compile-growth` wants a margin; graph breaks are compared by identity (report/diff.py's `break_key`), not by count, so a
break moved from one line to another is one new break, and a model that trades a break for another
fails `--max-new-graph-breaks 0`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, Callable

from .. import stats, units
from ..errors import EXIT_CHECK_FAILED, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE, UsageError
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
    "known_breaks",
    "allow_stale",
    "update_known_breaks",
)
BASELINE_KEYS = (
    "max_new_graph_breaks",
    "max_new_recompiles",
    "max_slowdown",
    "max_compile_growth",
)
_ORDER = {"dont-compile": 0, "compile-after-fixes": 1, "compile": 2}
# the verdict's speed undecided: it neither meets nor misses a --require-verdict (inconclusive)
CANT_TELL = "cant-tell"
INCONCLUSIVE_POLICIES = ("fail", "pass")  # `check --inconclusive`: how an inconclusive one counts


@dataclass(frozen=True)
class CheckResult:
    """One check: what was judged (`figure`, formatted, `units.NA` when missing), against which
    `limit`, whether it passed, and `reason`, the one line that says both (printed after the name).

    `error`: the check could not be judged (a tool or input problem; never passed). `inconclusive`:
    the figure's interval straddles the limit (never passed; not failed either: `failed` is False).
    `details`: one line per finding behind the figure (each graph break: file:line and reason), for
    the outputs that have room. `file`/`line`: where the finding is (the first graph break, the
    first recompile), as the report has it; renderers make it relative to the workspace."""

    name: str
    figure: str
    limit: str
    passed: bool
    reason: str
    error: bool = False
    details: tuple[str, ...] = ()
    file: str | None = None
    line: int | None = None
    inconclusive: bool = False

    @property
    def status(self) -> str:
        """PASS, FAIL, INCONCLUSIVE or ERROR: the word the terminal line starts with."""
        if self.error:
            return "ERROR"
        if self.inconclusive:
            return "INCONCLUSIVE"
        return "PASS" if self.passed else "FAIL"

    @property
    def failed(self) -> bool:
        """Judged and outside its limit (not an error, not inconclusive)."""
        return not self.passed and not self.error and not self.inconclusive


def error_result(name: str, message: str) -> CheckResult:
    """A check that could not be judged, or the gate itself failing (exit 2 or 3): one line."""
    return CheckResult(name, units.NA, "", False, message, error=True)


def gate_exit_code(results: list[CheckResult], inconclusive: str = "fail") -> int:
    """2 when a check could not be judged (an error), else 1 when one failed, else 5 when one was
    inconclusive and `inconclusive` is "fail" (`--inconclusive fail`, the default: its own code, so
    CI tells "not shown either way" from "failed"), else 0 (`--inconclusive pass` included)."""
    if any(r.error for r in results):
        return EXIT_USAGE
    if any(r.failed for r in results):
        return EXIT_CHECK_FAILED
    if inconclusive == "fail" and any(r.inconclusive for r in results):
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def counted(results: list[CheckResult], inconclusive: str = "fail") -> list[CheckResult]:
    """The results with each inconclusive one's reason saying how the gate counts it: '…; counted
    as a failure (--inconclusive fail)' or '…; counted as a pass (--inconclusive pass)'."""
    if inconclusive not in INCONCLUSIVE_POLICIES:
        raise ValueError(f"--inconclusive takes fail or pass, not {inconclusive!r}")
    how = "a failure" if inconclusive == "fail" else "a pass"
    return [
        replace(r, reason=f"{r.reason}; counted as {how} (--inconclusive {inconclusive})")
        if r.inconclusive
        else r
        for r in results
    ]


def gate_lines(results: list[CheckResult], note: str | None = None) -> list[str]:
    """The terminal lines of a gate: the note, one line per check (a failed check's findings
    indented under it), and the count."""
    lines = [note] if note else []
    for r in results:
        lines.append(f"{r.status:<4}  {r.name}: {r.reason}")
        if r.failed:
            lines += [f"        {d}" for d in r.details]
    lines.append(count_line(results))
    return lines


def count_line(results: list[CheckResult]) -> str:
    """'3 passed, 1 failed', with ', 1 inconclusive' and ', 1 error(s)' when there are any."""
    failed = sum(r.failed for r in results)
    errors = sum(r.error for r in results)
    unsure = sum(r.inconclusive and not r.error for r in results)
    passed = len(results) - failed - errors - unsure
    return (
        f"{passed} passed, {failed} failed"
        + (f", {unsure} inconclusive" if unsure else "")
        + (f", {errors} error(s)" if errors else "")
    )


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
    known_breaks: str | None = None,
    allow_stale: bool = False,
    update_known_breaks: bool = False,
) -> list[CheckResult]:
    """The thresholds given (None: not checked), in a fixed order; a failed phase always fails.

    `known_breaks`: the graph breaks judged against that file (report/known_breaks.py);
    `update_known_breaks` rewrites it from this report first (reasons kept).

    `compile_remedies`: --max-compile-seconds judges the best measured way to start (the cold
    whole model, or a remedy tried in a fresh process) and names the one it used."""
    out: list[CheckResult] = []

    def limit(name: str, value: Any, bound: Any, le: bool, show: Callable = str) -> None:
        if bound is not None:
            out.append(_judged(name, value, bound, le, show))

    if max_graph_breaks is not None:
        out.append(_graph_breaks(report, max_graph_breaks))
    if max_recompiles is not None:
        out.append(_recompiles(report, max_recompiles))
    if min_speedup is not None:
        out.append(_min_speedup(report, min_speedup))
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
    if known_breaks is not None:
        out.append(_known_breaks(report, known_breaks, allow_stale, update_known_breaks))
    elif allow_stale or update_known_breaks:
        raise UsageError("--allow-stale and --update-known-breaks need --known-breaks FILE")
    if require_numerics:
        out.append(_numerics(report))
    if require_verdict:
        out.append(_verdict(report, require_verdict))
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


def _level(level: float | None) -> str:
    """'95%', or the interval's own level ('98.2%': the headline's Pocock level)."""
    return f"{level * 100:.3g}%" if level and round(level, 4) != 0.95 else "95%"


def _after(report: Report, bound: float) -> str:
    """'after 6 processes (the cap: --processes 6)': how many processes the headline's interval
    rests on and why no more were timed."""
    rt = report.runtime
    seq = rt.sequence or {}
    n = seq.get("timed") or len(decided_on(rt.processes)) or 1
    what = f"after {n} process{'' if n == 1 else 'es'}"
    stopped, cap = seq.get("stopped"), seq.get("cap")
    if stopped == "cap":
        return f"{what} (the cap: --processes {cap})"
    if stopped == "budget":
        return f"{what} (the time budget ran out before the cap of {cap})"
    if stopped == "decided":
        if any(abs(t - bound) < 1e-9 for t in seq.get("thresholds") or ()):
            return f"{what} (each allocator regime answered; the headline's interval spans both)"
        return (
            f"{what} (they stopped once the verdict's question was answered: {bound:g}× was not "
            f"a threshold they were timed for; `check TARGET --min-speedup {bound:g}` times "
            "until it is answered)"
        )
    asked = (report.options or {}).get("processes")
    return f"{what} (" + (
        f"--processes {asked}: too few for sequential looks, none added)"
        if asked
        else "no sequence of processes recorded)"
    )


def _min_speedup(report: Report, bound: float) -> CheckResult:
    """--min-speedup X on the headline's decision interval: passed when its lower bound is ≥ X (as
    the verdict's "faster"), failed when its upper bound is < X, inconclusive when it straddles X
    (the reason says after how many processes and why no more were timed). A report without the
    upper bound is judged on the lower bound alone (pass or fail)."""
    rt = report.runtime
    r = _judged("speedup (95% CI lower bound)", rt.ci_low, bound, False, lambda v: f"{v:.3f}×")
    lo, hi = rt.ci_low, rt.ci_high
    if r.passed or lo is None or hi is None or hi < bound:
        return r
    interval = f"{_level(rt.ci_level)} CI {lo:.3f}–{hi:.3f}×"
    reason = f"{interval} straddles {bound:g}× {_after(report, bound)}"
    return replace(r, figure=interval, reason=reason, inconclusive=True)


def _verdict(report: Report, required: str) -> CheckResult:
    """--require-verdict: the decision at least `required`; a "cant-tell" verdict (the speed
    undecided at this precision) is inconclusive, neither meeting nor missing it."""
    d = report.verdict.decision
    limit = f"at least {required}"
    if d == CANT_TELL:
        reason = f"{d} ({units.decision_text(d)}: the speed is undecided; {limit} required)"
        return CheckResult("verdict", d, limit, False, reason, inconclusive=True)
    ok = d is not None and _ORDER.get(d, -1) >= _ORDER[required]
    return CheckResult("verdict", str(d), limit, ok, f"{d} ({limit} required)")


def _graph_breaks(report: Report, bound: int) -> CheckResult:
    """The graph-break count; each unique break one detail line (file:line and reason), the first
    one's location the result's."""
    r = _judged("graph breaks", report.graph_breaks.count, bound, True)
    breaks = sorted(report.graph_breaks.unique, key=lambda f: (f.file or "", f.line or 0))
    details = tuple(f"{f.where} {f.reason}" for f in breaks)
    first = breaks[0] if breaks else None
    return replace(
        r, details=details, file=first.file if first else None, line=first.line if first else None
    )


def _recompiles(report: Report, bound: int) -> CheckResult:
    r = _judged("recompiles", report.recompiles.count, bound, True)
    events = report.recompiles.events
    details = tuple(
        f"{e.file or '?'}:{e.line or '?'} {e.function} on {e.variant}: {e.reason}" for e in events
    )
    first = events[0] if events else None
    return replace(
        r, details=details, file=first.file if first else None, line=first.line if first else None
    )


def _known_breaks(report: Report, path: str, allow_stale: bool, update: bool) -> CheckResult:
    """The report's graph breaks (the user's and libraries' alike) against a known-breaks file: a
    new break fails, a stale entry fails unless allowed. With `update`, the file is rewritten from
    the report first (reasons kept, new entries with the placeholder reason) and judged after."""
    from . import known_breaks as kb

    name = "known graph breaks"
    if report.graph_breaks.count is None:
        return CheckResult(name, units.NA, path, False, f"{units.NA}: graph breaks not measured")
    findings = report.graph_breaks.unique
    if update:
        entries = kb.load(path) if os.path.exists(path) else []
        kb.write(path, kb.updated(entries, findings, path))
    cmp = kb.compare(kb.load(path), findings, path)
    failed = cmp.failed(allow_stale)
    reason = ("updated; " if update else "") + cmp.summary(allow_stale)
    first = cmp.new[0].breaks[0] if cmp.new else None
    return CheckResult(
        name,
        f"{len(cmp.new)} new, {len(cmp.stale)} stale",
        f"0 new, 0 stale{' (stale allowed)' if allow_stale else ''}",
        not failed,
        reason,
        details=tuple(cmp.lines(allow_stale)),
        file=first.file if first else None,
        line=first.line if first else None,
    )


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


# What each regression limit needs the baseline to have: (the figure in words, how to read it).
BASELINE_NEEDS: dict[str, tuple[str, Callable[[Report], Any]]] = {
    "max_new_graph_breaks": ("graph breaks", lambda r: r.graph_breaks.count),
    "max_new_recompiles": ("recompiles", lambda r: r.recompiles.count),
    "max_slowdown": ("speedup", lambda r: r.runtime.speedup),
    "max_compile_growth": ("cold compile time", lambda r: r.compile.cold_s),
}
BASELINE_CHECK = "baseline usable"


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def baseline_checks(
    new: Report,
    old: Report,
    max_new_graph_breaks: int | None = None,
    max_new_recompiles: int | None = None,
    max_slowdown: float | None = None,
    max_compile_growth: float | None = None,
) -> list[CheckResult]:
    """`new` judged against `old`, one result per limit given (None: not checked).

    A baseline with failed phases judges nothing: one error result says so. A baseline that lacks
    the figure a limit needs: that limit is not judged, and one error result names every figure
    missing and the limit that needed it. Neither is a failed check: the model was not judged."""
    limits = {
        "max_new_graph_breaks": max_new_graph_breaks,
        "max_new_recompiles": max_new_recompiles,
        "max_slowdown": max_slowdown,
        "max_compile_growth": max_compile_growth,
    }
    given = {k: v for k, v in limits.items() if v is not None}
    if not given:
        return []
    if old.errors:
        phases = "; ".join(f"{e.get('phase')}: {e.get('message')}" for e in old.errors[:3])
        more = f" (+{len(old.errors) - 3} more)" if len(old.errors) > 3 else ""
        why = f"the baseline is incomplete ({len(old.errors)} phase(s) failed: {phases}{more})"
        return [error_result(BASELINE_CHECK, f"{why}; no regression judged against it")]
    lacking = [k for k in given if BASELINE_NEEDS[k][1](old) is None]
    judge = {
        "max_new_graph_breaks": _new_breaks,
        "max_new_recompiles": _new_recompiles,
        "max_slowdown": _slowdown,
        "max_compile_growth": _compile_growth,
    }
    out = []
    for k, v in given.items():
        r = None if k in lacking else judge[k](new, old, v)
        if r is None or r.error:  # the baseline lacks what this limit reads (e.g. its CI)
            lacking += [] if k in lacking else [k]
        else:
            out.append(r)
    if lacking:
        what = ", ".join(f"the {BASELINE_NEEDS[k][0]} ({_flag(k)})" for k in lacking)
        out.append(
            error_result(BASELINE_CHECK, f"the baseline lacks {what}: not judged against it")
        )
    return out


def regressions(before: Report, after: Report) -> list[CheckResult]:
    """What `tcdoctor diff` calls a regression, judged as `check --baseline` judges it: a graph
    break not in `before`, more recompiles, or the speedup shown slower at all (`_slowdown` with no
    margin). A figure either report lacks is an error result (not judged), not a regression."""
    out = []
    for key, judge in (
        ("max_new_graph_breaks", _new_breaks),
        ("max_new_recompiles", _new_recompiles),
        ("max_slowdown", lambda a, b, p: _slowdown(a, b, p, three=False)),  # shown slower, or not
    ):
        what, read = BASELINE_NEEDS[key]
        if read(before) is None or read(after) is None:
            which = "before" if read(before) is None else "after"
            out.append(error_result(what, f"{units.NA} {which}: not judged"))
        else:
            out.append(judge(after, before, 0))
    return out


def _missing(name: str, limit: str, new: Any, old: Any) -> CheckResult | None:
    """When either report lacks the figure: a failed result for the new report's (an unmeasured
    figure fails), an error result for the baseline's (it cannot be judged against)."""
    if new is not None and old is not None:
        return None
    if old is None:
        return error_result(name, f"{units.NA} in the baseline, limit {limit}")
    return CheckResult(name, units.NA, limit, False, f"{units.NA} in the new report, limit {limit}")


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


def _slowdown(new: Report, old: Report, pct: float, three: bool = True) -> CheckResult:
    """One-sided Welch tests on the two reports' per-process log speedups (the processes each
    headline was decided on): fails when the new speedup is shown slower than the baseline's by
    more than `pct` (the upper 95% confidence bound of new/old below 1 − pct/100), passes when it
    is shown not slower by more than `pct` (the lower 95% bound at or above it), and is
    inconclusive between (the 90% interval those two bounds make straddles 1 − pct/100). At a true
    slowdown of exactly `pct` it fails 5% of the time; beyond, more often (tests/test_gate.py).
    `three=False` (`tcdoctor diff`'s "shown slower at all"): passes whenever it does not fail.
    Reports with fewer than two processes each are judged on their intervals
    (`_slowdown_by_intervals`)."""
    name, limit = "slowdown (vs baseline)", f"≤ {pct:g}% slower"
    a, b = new.runtime, old.runtime
    missing = _missing(name, limit, a.speedup, b.speedup)
    if missing:
        return missing
    xs = [r["speedup"] for r in decided_on(a.processes)]
    ys = [r["speedup"] for r in decided_on(b.processes)]
    if len(xs) < 2 or len(ys) < 2:
        return _slowdown_by_intervals(new, old, pct, three)
    change, upper, lo, hi = stats.welch_log_ratio(xs, ys)
    lower = change * change / upper  # the one-sided lower bound: the upper mirrored in log space
    figure = f"{change - 1:+.1%} (95% CI {lo - 1:+.1%} to {hi - 1:+.1%})"
    counts = (
        f"; note: {len(xs)} processes against the baseline's {len(ys)}"
        if len(xs) != len(ys)
        else ""
    )
    margin = 1 - pct / 100
    shown = f"new {units.ratio(a.speedup)}, baseline {units.ratio(b.speedup)}"
    if three and margin <= upper and lower < margin:
        interval = f"90% CI {lower - 1:+.1%} to {upper - 1:+.1%}"
        reason = (
            f"{interval} straddles {-pct:g}% after {len(xs)} + {len(ys)} processes (new + "
            f"baseline): {shown}, neither shown slower by more than {pct:g}% nor shown within "
            f"it (one-sided Welch tests on the log speedups, 95% each){counts}"
        )
        return CheckResult(name, interval, limit, False, reason, inconclusive=True)
    passed = upper >= margin
    reason = (
        f"{figure}: {shown}, one-sided "
        f"Welch test on {len(xs)} + {len(ys)} processes' log speedups ({limit} required){counts}"
    )
    return CheckResult(name, figure, limit, passed, reason)


def _slowdown_by_intervals(new: Report, old: Report, pct: float, three: bool = True) -> CheckResult:
    """Fewer than two processes in a report: fails when the new interval's upper bound is under
    (1 − pct/100) × the baseline's lower bound, passes when its lower bound is at or above
    (1 − pct/100) × the baseline's upper bound, inconclusive between (`three`)."""
    name, limit = "slowdown (vs baseline)", f"≤ {pct:g}% slower"
    a, b = new.runtime, old.runtime
    missing = _missing(name, limit, a.ci_high, b.ci_low)
    if missing:
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
