"""Thresholds for `tcdoctor check`: the gate's table, each check judged to a typed `CheckResult`
(checks/outcome.py) with the figure it was judged on.

Each check is one entry of the table `CHECKS` (at the end): its limit's keyword and flag, what it
judges and how (`Check`). Three kinds are judged from here: absolute thresholds on one report
(`run_checks`; the judges are checks/judges.py's), regressions of a report against a baseline
report (`baseline_checks`; checks/regression.py's; `tcdoctor diff` judges its regressions by the
same code, `regressions`), and thresholds on a sweep's overview (`sweep_checks`; checks/sweep.py's).
tcdoctor/commands/ makes `check`'s flags, refusals and outputs from the table. Every output of
`check` and `check --sweep` (the terminal lines, the JUnit XML, the GitHub step summary and
annotations) reads the same `CheckResult`s, so a check is worded once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .. import units
from ..errors import OptionError, UsageError
from ..outcomes import Decision
from . import generation
from .judges import (
    compile_seconds,
    graph_breaks,
    known_breaks,
    min_speedup,
    numerics,
    p99,
    recompiles,
    traffic_compiles,
    verdict,
    warmup_proof,
)
from .outcome import CheckResult, error_result, judged
from .questions import Questions, slowdown_question
from .regression import (
    compile_growth,
    new_breaks,
    new_recompiles,
    slowdown,
    slowdowns,
)
from .sweep import no_new_slower_than_eager, pass_rate

if TYPE_CHECKING:  # the table is read where `check` is built: the report classes load on use
    from ..report.model import Report
    from ..report.sweep import Sweep

# The gate's table: every check of `tcdoctor check` is one `Check` in `CHECKS` (at the end of this
# module), from which tcdoctor/commands/ makes its click option, its keyword here (`run_checks`,
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
    `judge(new, baseline, value)`. Without a `judge`, a report check is `judged`
    (checks/outcome.py): `reads(report)` against `value`, at most it when `at_most` (else at
    least), the figure written by `show`, the check called `name`. A baseline check's `reads` is
    what the baseline must have (`figure`, in words: "the baseline lacks the speedup
    (--max-slowdown)"). A sweep check's `judge(overview, value)` is checks/sweep.py's.

    `part_of`: this flag only modifies another check's (`--allow-stale` of `--known-breaks`): not
    judged alone, refused without that one. `asks(value, baseline)`: the `Questions`
    (checks/questions.py) `check TARGET` hands the analysis's timing loop, which keeps timing
    processes until they are answered (a speedup, a `SlowdownQuestion`; None: none). Pitfall: a
    `kind` "switch" is given when True, and a limit of None or False is not checked at all."""

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
    asks: Callable[[Any, Report | None], Questions | None] | None = None

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
            return [judged(self.name, figure, value, self.at_most, self.show)]
        if self.scope == BASELINE:
            found = self.judge(subject, limits["baseline"], value)
        else:
            found = self.judge(subject, value, **{k: limits.get(k) for k in self.uses})
        return [found] if isinstance(found, CheckResult) else list(found)


def questions(limits: dict[str, Any], baseline: Report | None) -> Questions:
    """What the checks given ask of the timing loop (`Check.asks`), in the table's order."""
    asked = (c.asks(limits[c.key], baseline) for c in CHECKS if c.asks and given(limits.get(c.key)))
    return Questions.of(q for q in asked if q is not None)


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


def run_checks(report: Report, compile_remedies: bool = False, **limits: Any) -> list[CheckResult]:
    """The report's checks whose limit is given (the keyword of each REPORT entry of `CHECKS`;
    None or False: not checked), in the table's order; a failed phase always fails.

    `known_breaks`: the graph breaks judged against that file (checks/known_breaks.py);
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
                "; ".join(f"{e.phase}: {e.message}" for e in report.errors),
            )
        )
    return out


def sweep_checks(sweep: Sweep, **limits: Any) -> list[CheckResult]:
    """A sweep overview's checks whose limit is given (the keyword of each SWEEP entry of
    `CHECKS`), in the table's order (`check --sweep DIR`)."""
    return _judge_all(SWEEP, sweep, limits)


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
        phases = "; ".join(f"{e.phase}: {e.message}" for e in old.errors[:3])
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
    break not in `before`, more recompiles, or the speedup shown slower at all (`slowdown` with no
    margin). A figure either report lacks is an error result (not judged), not a regression."""
    out = []
    for key, judge in (
        ("max_new_graph_breaks", new_breaks),
        ("max_new_recompiles", new_recompiles),
        ("max_slowdown", lambda a, b, p: slowdown(a, b, p, three=False)),  # shown slower, or not
    ):
        what, read = entry(key).figure, entry(key).reads
        if read(before) is None or read(after) is None:
            which = "before" if read(before) is None else "after"
            out.append(error_result(what, f"{units.NA} {which}: not judged"))
        else:
            out.append(judge(after, before, 0))
    return out


CHECKS: tuple[Check, ...] = (
    Check(
        "min_pass_rate",
        "share",
        SWEEP,
        "With --sweep: share of targets analysed without an error (0-1).",
        judge=pass_rate,
    ),
    Check(
        "no_new_slower_than_eager",
        "switch",
        SWEEP,
        "With --sweep: fail if a model is slower than eager (CI below 1x) and was not before.",
        judge=no_new_slower_than_eager,
    ),
    Check("max_graph_breaks", "count", judge=graph_breaks),
    Check("max_recompiles", "count", judge=recompiles),
    Check(
        "min_speedup",
        "number",
        help=(
            "The speedup's decision interval (the headline's, at its per-look level) must reach "
            "this: passes when its lower bound does, fails when its upper bound is below, else "
            "inconclusive."
        ),
        judge=min_speedup,
        asks=lambda bound, _: Questions(speedups=(bound,)),
    ),
    Check(
        "max_compile_seconds",
        "number",
        help="Cold first-call compile time (with --compile-remedies: the best measured remedy's).",
        judge=compile_seconds,
        uses=("compile_remedies",),
    ),
    Check(
        "max_memory_ratio",
        "number",
        help="Compiled memory / eager's: each side's memory held after warm-up plus a steady "
        "call's peak (the peaks alone where held memory was not measured).",
        name="memory ratio compiled/eager",
        reads=lambda r: r.memory.gate_ratio,
        show=lambda v: f"{v:.2f}",
    ),
    Check(
        "known_breaks",
        "path",
        help="Accepted graph breaks (TOML or JSON, docs/api.md): fail on a break not listed, or "
        "on a listed one that no longer occurs (stale).",
        metavar="FILE",
        judge=known_breaks,
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
    Check("require_numerics", "switch", help="Numerics check must pass.", judge=numerics),
    Check(
        "require_verdict",
        "choice",
        help="Verdict must be at least this good (a cant-tell verdict, the speed undecided, is "
        "inconclusive).",
        choices=(Decision.COMPILE.value, Decision.COMPILE_AFTER_FIXES.value),
        judge=verdict,
    ),
    Check(
        "max_p99_ms",
        "number",
        help="The compiled model's p99 latency under the traffic replayed, in ms (compile stalls "
        "included; after your Traffic(warmup=...) where it gives one). Needs a serving section: "
        "analyze --traffic N, or a Workload with a traffic.",
        metavar="MS",
        judge=p99,
    ),
    Check(
        "max_ttft_ms",
        "number",
        help="A Generation's time to first token p99 in ms, compiled, from a cold start (the "
        "first requests' compiles included). Needs a tcdoctor.Generation target.",
        metavar="MS",
        judge=generation.ttft,
    ),
    Check(
        "max_itl_p99_ms",
        "number",
        help="A Generation's inter-token latency p99 in ms, compiled (compiles during decoding "
        "included). Needs a tcdoctor.Generation target.",
        metavar="MS",
        judge=generation.itl_p99,
    ),
    Check(
        "min_tokens_per_s",
        "number",
        help="A Generation's tokens/s, compiled: new tokens over the sum of the request times. "
        "Needs a tcdoctor.Generation target.",
        metavar="N",
        judge=generation.tokens_per_s,
    ),
    Check(
        "max_traffic_compiles",
        "count",
        help="Compiles during the traffic replayed (each named with its request and guard; your "
        "Traffic(warmup=...)'s are start-up cost, not counted).",
        judge=traffic_compiles,
    ),
    Check(
        "require_warmup_proof",
        "switch",
        help="The warm-up (your Traffic(warmup=...), else the one derived from the traffic's "
        "compiles) must be proven in a fresh process: no request compiles after it.",
        judge=warmup_proof,
    ),
    Check(
        "max_new_graph_breaks",
        "count",
        BASELINE,
        "Graph breaks not in the baseline (by location and reason, not count).",
        judge=new_breaks,
        reads=lambda r: r.graph_breaks.count,
        figure="graph breaks",
    ),
    Check(
        "max_new_recompiles",
        "count",
        BASELINE,
        "Recompiles more than the baseline's.",
        judge=new_recompiles,
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
        judge=slowdowns,
        asks=lambda pct, baseline: (
            Questions(slowdown=slowdown_question(baseline, pct)) if baseline else None
        ),
        reads=lambda r: r.runtime.speedup,
        figure="speedup",
    ),
    Check(
        "max_compile_growth",
        "number",
        BASELINE,
        "Fail when the cold compile grew by more than PCT% over the baseline's.",
        metavar="PCT",
        judge=compile_growth,
        reads=lambda r: r.compile.cold_s,
        figure="cold compile time",
    ),
)
