"""Thresholds for `tcdoctor check`: each is a typed `CheckResult` with the figure it was judged on.

Each check is one entry of the table `CHECKS` (at the end): its limit's keyword and flag, what it
judges and how (`Check`). Two kinds are judged here: absolute thresholds on one report
(`run_checks`), and regressions of a report against a baseline report (`baseline_checks`;
`tcdoctor diff` judges its regressions by the same code, `regressions`); a sweep's are declared
here and judged by report/sweep.py. tcdoctor/gate/ makes `check`'s flags, refusals and outputs from
the table. Every output of `check` and `check --sweep` (the terminal lines, the JUnit XML, the
GitHub step summary and annotations) reads the same `CheckResult`s, so a check is worded once.

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
medians or two intervals' overlap (timings on shared machines swing by tens of percent), printed
with the one-sided bound it was judged on and that bound's level (the new run's per-look level:
`check TARGET` adds processes while the comparison is undecided, `SlowdownQuestion`), compared
within allocator regime (`compare_processes`: a changed regime mix is inconclusive, never a
regression), and told apart from the compiled time itself getting slower (`_compiled_slower`,
where device, torch and threads match: "compiled got slower" is not "compile's advantage
shrank", which an eager improvement alone also causes); the cold
compile time is one sample, so `--max-compile-growth` wants a margin; graph breaks are compared by identity (report/diff.py's `break_key`), not by count, so a
break moved from one line to another is one new break, and a model that trades a break for another
fails `--max-new-graph-breaks 0`.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

from .. import stats, units
from ..errors import (
    EXIT_CHECK_FAILED,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_USAGE,
    OptionError,
    UsageError,
)
from .runtime_processes import MIN_PER_REGIME, decided_on, small_baseline_why

if TYPE_CHECKING:  # the table is read where `check` is built: the report classes load on use
    from .model import Report

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


# The gate's table: every check of `tcdoctor check` is one `Check` in `CHECKS` (at the end of this
# module), from which tcdoctor/gate/ makes its click option, its keyword here (`run_checks`,
# `baseline_checks`), `check --sweep`'s refusals and its rows in every output.

REPORT, BASELINE, SWEEP = "report", "baseline", "sweep"  # what a check judges
# how a limit is typed on the command line: a count (int ≥ 0), a number (float ≥ 0), a share
# (float 0-1), a switch (given or not), a choice (one of `choices`), a path (text)
LIMIT_KINDS = ("count", "number", "share", "switch", "choice", "path")


@dataclass(frozen=True)
class Check:
    """One gate check, declared once: its limit's keyword (`key`; the flag is `--key-with-dashes`)
    and how the flag is typed (`kind` in LIMIT_KINDS, `help`, `metavar`, `choices`), what it
    judges (`scope`: one report, a report against a baseline, a sweep's overview), and how.

    How: `judge(report, value, **uses)` returns the CheckResult (or several) for the limit
    `value`, the other limits named in `uses` passed by keyword; a baseline check's is
    `judge(new, baseline, value)`. Without a `judge`, a report check is `_judged`:
    `reads(report)` against `value`, at most it when `at_most` (else at least), the figure
    written by `show`, the check called `name`. A baseline check's `reads` is what the baseline
    must have (`figure`, in words: "the baseline lacks the speedup (--max-slowdown)"). A sweep
    check's `judge` is None: the overview's own `report.sweep.check` judges it (report/sweep.py
    imports this module).

    `part_of`: this flag only modifies another check's (`--allow-stale` of `--known-breaks`): not
    judged alone, refused without that one. `asks(value, baseline)`: the question `check TARGET`
    hands the analysis's timing loop, which keeps timing processes until it is answered (a
    speedup threshold, a `SlowdownQuestion`; None: none). Pitfall: a `kind` "switch" is given
    when True, and a limit of None or False is not checked at all."""

    key: str
    kind: str
    scope: str = REPORT
    help: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    judge: Callable[..., CheckResult | list[CheckResult]] | None = None
    uses: tuple[str, ...] = ()
    name: str = ""
    reads: Callable[[Report], Any] | None = None
    at_most: bool = True
    show: Callable[[Any], str] = str
    figure: str = ""
    part_of: str | None = None
    asks: Callable[[Any, Report | None], Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in LIMIT_KINDS or self.scope not in (REPORT, BASELINE, SWEEP):
            raise ValueError(f"check {self.key}: kind {self.kind!r}, scope {self.scope!r}")
        if self.scope == REPORT and self.part_of is None and not (self.judge or self.reads):
            raise ValueError(f"check {self.key}: a report check needs a judge or what it reads")

    @property
    def spelling(self) -> str:
        """The flag, `--max-graph-breaks`."""
        return "--" + self.key.replace("_", "-")

    def judged(self, subject: Any, value: Any, limits: dict[str, Any]) -> list[CheckResult]:
        """This check's results on `subject` for the limit `value` (`limits`: all those given)."""
        if self.judge is None:
            figure = self.reads(subject)  # type: ignore[misc]
            return [_judged(self.name, figure, value, self.at_most, self.show)]
        if self.scope == BASELINE:
            found = self.judge(subject, limits["baseline"], value)
        else:
            found = self.judge(subject, value, **{k: limits.get(k) for k in self.uses})
        return [found] if isinstance(found, CheckResult) else list(found)


def questions(limits: dict[str, Any], baseline: Report | None) -> tuple[Any, ...]:
    """What the checks given ask of the timing loop (`Check.asks`), in the table's order."""
    asked = (c.asks(limits[c.key], baseline) for c in CHECKS if c.asks and given(limits.get(c.key)))
    return tuple(q for q in asked if q is not None)


def checks(scope: str | None = None) -> list[Check]:
    """The table's checks (of one `scope`), in its order: that of the results and of --help."""
    return [c for c in CHECKS if scope is None or c.scope == scope]


def entry(key: str) -> Check:
    """The check whose limit is `key`."""
    return next(c for c in CHECKS if c.key == key)


def given(value: Any) -> bool:
    """A limit is given: neither None nor False (an unset switch)."""
    return value is not None and value is not False


def _entries(scope: str, limits: dict[str, Any]) -> list[Check]:
    """The `scope`'s checks. A limit of no check there is an OptionError (a ValueError) naming the
    known ones; a `part_of` limit given without its check's a UsageError naming both flags."""
    mine = checks(scope)
    keys = {c.key for c in mine} | {"compile_remedies", "baseline"}
    unknown = [k for k in limits if k not in keys]
    if unknown:
        raise OptionError(
            f"no {scope} check takes {', '.join(unknown)} "
            f"(limits: {', '.join(c.key for c in mine)})"
        )
    for c in mine:
        parts = [p for p in mine if p.part_of == c.key]
        if not given(limits.get(c.key)) and any(given(limits.get(p.key)) for p in parts):
            meta = f" {c.metavar}" if c.metavar else ""
            names = " and ".join(p.spelling for p in parts)
            raise UsageError(f"{names} need {c.spelling}{meta}")
    return mine


def _judge_all(scope: str, subject: Any, limits: dict[str, Any]) -> list[CheckResult]:
    """Every `scope` check whose limit is given, judged in the table's order."""
    out: list[CheckResult] = []
    for c in _entries(scope, limits):
        if c.part_of is None and given(limits.get(c.key)):
            out += c.judged(subject, limits[c.key], limits)
    return out


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


def run_checks(report: Report, compile_remedies: bool = False, **limits: Any) -> list[CheckResult]:
    """The report's checks whose limit is given (the keyword of each REPORT entry of `CHECKS`;
    None or False: not checked), in the table's order; a failed phase always fails.

    `known_breaks`: the graph breaks judged against that file (report/known_breaks.py);
    `update_known_breaks` rewrites it from this report first (reasons kept).

    `compile_remedies`: --max-compile-seconds judges the best measured way to start (the cold
    whole model, or a remedy tried in a fresh process) and names the one it used."""
    out = _judge_all(REPORT, report, {**limits, "compile_remedies": compile_remedies})
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
    if stopped == "futile":
        return f"{what} (stopped: more processes would not decide, cap {cap})"
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


def _known_breaks(
    report: Report, path: str, allow_stale: bool = False, update_known_breaks: bool = False
) -> CheckResult:
    """The report's graph breaks (the user's and libraries' alike) against a known-breaks file: a
    new break fails, a stale entry fails unless allowed. With `update_known_breaks`, the file is
    rewritten from the report first (reasons kept, new entries with the placeholder reason) and
    judged after."""
    from . import known_breaks as kb

    update = bool(update_known_breaks)
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


def _numerics(report: Report, required: bool = True) -> CheckResult:
    """--require-numerics: the numerics check passed (`required` is the switch, always True here)."""
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


def _compile_seconds(report: Report, bound: float, compile_remedies: bool = False) -> CheckResult:
    """--max-compile-seconds: the cold first call, or with `compile_remedies` the best measured
    way to start (`_best_start`)."""
    if compile_remedies:
        return _best_start(report, bound)
    return _judged("cold compile seconds", report.compile.cold_s, bound, True, units.seconds)


# Regressions against a baseline report (`check --baseline old.json`).


BASELINE_CHECK = "baseline usable"


def baseline_checks(new: Report, old: Report, **limits: Any) -> list[CheckResult]:
    """`new` judged against `old`, one result per limit given (the keyword of each BASELINE entry
    of `CHECKS`; None: not checked).

    A baseline with failed phases judges nothing: one error result says so. A baseline that lacks
    the figure a limit needs (its entry's `reads`): that limit is not judged, and one error result
    names every figure missing and the limit that needed it. Neither is a failed check: the model
    was not judged."""
    entries = _entries(BASELINE, limits)
    asked = [(c, limits[c.key]) for c in entries if given(limits.get(c.key))]
    if not asked:
        return []
    if old.errors:
        phases = "; ".join(f"{e.get('phase')}: {e.get('message')}" for e in old.errors[:3])
        more = f" (+{len(old.errors) - 3} more)" if len(old.errors) > 3 else ""
        why = f"the baseline is incomplete ({len(old.errors)} phase(s) failed: {phases}{more})"
        return [error_result(BASELINE_CHECK, f"{why}; no regression judged against it")]
    lacking = [c for c, _ in asked if c.reads is not None and c.reads(old) is None]
    out = []
    for c, v in asked:
        found = [] if c in lacking else c.judged(new, v, {"baseline": old})
        if not found or found[0].error:  # the baseline lacks what this limit reads (e.g. its CI)
            lacking += [] if c in lacking else [c]
        else:
            out += found
    if lacking:
        what = ", ".join(f"the {c.figure} ({c.spelling})" for c in lacking)
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
        what, read = entry(key).figure, entry(key).reads
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
    from .diff import introduced_breaks

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
    missing = _missing(name, limit, a.speedup, b.speedup)
    if missing:
        return missing
    xs, ys = decided_on(a.processes), decided_on(b.processes)
    if len(xs) < 2 or len(ys) < 2:
        return _slowdown_by_intervals(new, old, pct, three)
    shown = f"new {units.ratio(a.speedup)}, baseline {units.ratio(b.speedup)}"
    cmp = compare_processes(xs, ys, _speed, pct, slowdown_level(new), three)
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
    xs = [r for r in decided_on(new.runtime.processes) if r.get("compiled_median_s")]
    ys = [r for r in decided_on(old.runtime.processes) if r.get("compiled_median_s")]
    if len(xs) < 2 or len(ys) < 2:
        return None
    name, limit = "compiled time (vs baseline)", f"≤ {pct:g}% slower"
    per_call = (
        f"compiled per call {units.seconds(statistics.median(r['compiled_median_s'] for r in xs))}"
        f" against {units.seconds(statistics.median(r['compiled_median_s'] for r in ys))} "
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


def _speed(r: dict) -> float:
    return r["speedup"]


def _compiled_speed(r: dict) -> float:
    return 1.0 / r["compiled_median_s"]


def slowdown_level(new: Report) -> float:
    """The one-sided level of the regression bounds: the new run's per-look level when its
    processes were added one look at a time (Pocock's, `runtime.ci_level`: the loop looked at the
    question after each process, so each look is held to it), else 95%."""
    seq = new.runtime.sequence or {}
    level = new.runtime.ci_level
    return level if level and (seq.get("looks") or 1) > 1 else 0.95


@dataclass(frozen=True)
class Comparison:
    """One comparison of two reports' processes (`compare_processes`): `outcome` failed, passed
    or inconclusive; `parts`: (regime or None, change new/old, one-sided lower, one-sided upper,
    new processes, baseline processes) per regime compared; `level`: each bound's one-sided level;
    `left_out`: why a regime (or every one) was not compared; `three`: an inconclusive outcome
    allowed (else "not shown slower" passes)."""

    outcome: str
    parts: tuple[tuple[str | None, float, float, float, int, int], ...]
    level: float
    left_out: str = ""
    three: bool = True


def _by_regime(rows: list[dict]) -> dict[str | None, list[dict]]:
    by: dict[str | None, list[dict]] = {}
    for r in rows:
        by.setdefault(r.get("regime"), []).append(r)
    if len(by) > 1 and None in by:  # a process without fault counts joins no regime
        by.pop(None)
    return by


def _regimes_text(by: dict[str | None, list[dict]]) -> str:
    return ", ".join(f"{len(rs)} {g}" for g, rs in by.items())


def compare_processes(
    new: list[dict],
    old: list[dict],
    value: Callable[[dict], float],
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
    bn, bo = _by_regime(new), _by_regime(old)
    if (len(bn) == 1 and len(bo) == 1 and bn.keys() == bo.keys()) or None in bn or None in bo:
        groups: list[tuple[str | None, list[dict], list[dict]]] = [(None, new, old)]
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
            return Comparison("inconclusive", (), level, why, three)
    each = 1 - (1 - level) / len(groups)
    parts = []
    for g, xs, ys in groups:
        change, upper, _, _ = stats.welch_log_ratio(
            [value(r) for r in xs], [value(r) for r in ys], each
        )
        parts.append((g, change, change * change / upper, upper, len(xs), len(ys)))
    if any(p[3] < margin for p in parts):
        outcome = "failed"
    elif not three or all(p[2] >= margin for p in parts):
        outcome = "passed"
    else:
        outcome = "inconclusive"
    return Comparison(outcome, tuple(parts), each, left_out, three)


def _bound(cmp: Comparison, part: tuple, margin: float) -> str:
    """'-24.6% (one-sided 98.1% upper bound -18.2%)': the change and the bound it was judged on."""
    g, change, lower, upper, _, _ = part
    lv = f"one-sided {_level(cmp.level)}"
    if upper < margin or not cmp.three:
        b = f"{lv} upper bound {upper - 1:+.1%}"
    elif lower >= margin:
        b = f"{lv} lower bound {lower - 1:+.1%}"
    else:
        b = f"{lv} bounds {lower - 1:+.1%} and {upper - 1:+.1%}"
    return f"{g + ': ' if g else ''}{change - 1:+.1%} ({b})"


def _stopped(new: Report) -> str:
    """Why the new run timed no more processes, for an inconclusive regression."""
    seq = new.runtime.sequence or {}
    return {
        "cap": f"; the new run reached its cap (--processes {seq.get('cap')})",
        "budget": "; the new run's time budget ran out before its cap",
        "decided": "; the new run stopped once its questions were answered",
    }.get(seq.get("stopped") or "", "")


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
    if cmp.outcome == "inconclusive":
        reason = (
            f"{unsure}{by}: {figure} straddle {-pct:g}% ({how}{_stopped(new)}): {shown}{regimes}"
        )
        return CheckResult(name, figure, limit, False, reason, inconclusive=True)
    word = failed if cmp.outcome == "failed" else (passed if cmp.three else not_shown)
    reason = f"{word}{by}: {figure} ({limit} required; {how}): {shown}{regimes}"
    return CheckResult(name, figure, limit, cmp.outcome == "passed", reason)


@dataclass(frozen=True)
class SlowdownQuestion:
    """`check TARGET --baseline B --max-slowdown PCT` asked of the process loop (run/launcher.py):
    the new run keeps adding processes, up to its cap, while `answered` is False, that is while
    the Welch comparison with the baseline's processes (`compare_processes`, at the loop's
    per-look level) straddles 1 − PCT/100. Passed to the analysis among its `thresholds`."""

    baseline: tuple[dict, ...]
    pct: float

    def answered(self, rows: list[dict], level: float) -> bool:
        if len(rows) < 2:
            return False
        cmp = compare_processes(list(rows), list(self.baseline), _speed, self.pct, level)
        return cmp.outcome != "inconclusive"

    @property
    def text(self) -> str:
        return f"--max-slowdown {self.pct:g} against the baseline's {len(self.baseline)} processes"


def slowdown_question(old: Report, pct: float | None) -> SlowdownQuestion | None:
    """The loop's regression question, where the baseline has two processes to compare with."""
    rows = decided_on(old.runtime.processes)
    if pct is None or len(rows) < 2 or old.errors:
        return None
    return SlowdownQuestion(tuple(rows), pct)


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


def _slowdowns(new: Report, old: Report, pct: float) -> list[CheckResult]:
    """--max-slowdown: compile's advantage (`_slowdown`), then compiled itself where comparable
    (`_compiled_slower`)."""
    r = _slowdown(new, old, pct)
    c = None if r.error else _compiled_slower(new, old, pct)
    return [r] + ([c] if c is not None else [])


CHECKS: tuple[Check, ...] = (
    Check(
        "min_pass_rate",
        "share",
        SWEEP,
        "With --sweep: share of targets analysed without an error (0-1).",
    ),
    Check(
        "no_new_slower_than_eager",
        "switch",
        SWEEP,
        "With --sweep: fail if a model is slower than eager (CI below 1x) and was not before.",
    ),
    Check("max_graph_breaks", "count", judge=_graph_breaks),
    Check("max_recompiles", "count", judge=_recompiles),
    Check(
        "min_speedup",
        "number",
        help="Lower bound of the speedup's 95% CI must reach this.",
        judge=_min_speedup,
        asks=lambda bound, _: bound,
    ),
    Check(
        "max_compile_seconds",
        "number",
        help="Cold first-call compile time (with --compile-remedies: the best measured remedy's).",
        judge=_compile_seconds,
        uses=("compile_remedies",),
    ),
    Check(
        "max_memory_ratio",
        "number",
        help="Compiled peak / eager peak.",
        name="memory ratio compiled/eager",
        reads=lambda r: r.memory.ratio,
        show=lambda v: f"{v:.2f}",
    ),
    Check(
        "known_breaks",
        "path",
        help="Accepted graph breaks (TOML or JSON, docs/api.md): fail on a break not listed, or "
        "on a listed one that no longer occurs (stale).",
        metavar="FILE",
        judge=_known_breaks,
        uses=("allow_stale", "update_known_breaks"),
    ),
    Check(
        "allow_stale",
        "switch",
        help="With --known-breaks: a stale entry does not fail.",
        part_of="known_breaks",
    ),
    Check(
        "update_known_breaks",
        "switch",
        help="With --known-breaks: rewrite FILE from this report first (reasons kept; new "
        "entries get a TODO reason to edit).",
        part_of="known_breaks",
    ),
    Check("require_numerics", "switch", help="Numerics check must pass.", judge=_numerics),
    Check(
        "require_verdict",
        "choice",
        help="Verdict must be at least this good (a cant-tell verdict, the speed undecided, is "
        "inconclusive).",
        choices=("compile", "compile-after-fixes"),
        judge=_verdict,
    ),
    Check(
        "max_new_graph_breaks",
        "count",
        BASELINE,
        "Graph breaks not in the baseline (by location and reason, not count).",
        judge=_new_breaks,
        reads=lambda r: r.graph_breaks.count,
        figure="graph breaks",
    ),
    Check(
        "max_new_recompiles",
        "count",
        BASELINE,
        "Recompiles more than the baseline's.",
        judge=_new_recompiles,
        reads=lambda r: r.recompiles.count,
        figure="recompiles",
    ),
    Check(
        "max_slowdown",
        "number",
        BASELINE,
        "Fail when the speedup is shown slower than the baseline's by more than PCT% (one-sided "
        "Welch test on the two reports' per-process speedups, 95%).",
        metavar="PCT",
        judge=_slowdowns,
        asks=lambda pct, baseline: slowdown_question(baseline, pct) if baseline else None,
        reads=lambda r: r.runtime.speedup,
        figure="speedup",
    ),
    Check(
        "max_compile_growth",
        "number",
        BASELINE,
        "Fail when the cold compile grew by more than PCT% over the baseline's.",
        metavar="PCT",
        judge=_compile_growth,
        reads=lambda r: r.compile.cold_s,
        figure="cold compile time",
    ),
)
