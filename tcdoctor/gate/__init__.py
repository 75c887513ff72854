"""The gate: `tcdoctor check`, and the same checks in Python (`check`).

Each check is declared once, as one entry of the table `report.check.CHECKS` (its limit's keyword
and flag, how the flag is typed, what it reads, how it judges; see `report.check.Check`). From that
table this package makes: the click options of `check` (flags.py), its Python keyword (`check`
here, `report.check.run_checks` and `baseline_checks`), what `check --sweep` and `check` refuse
(run.py), and its rows in every output (outputs.py: the terminal lines, the JUnit XML, the GitHub
step summary and annotations read the same `CheckResult`s). `load_saved` (saved.py) is the one
way a saved report is read, by `report`, `check --report`, `--baseline`, `fix`, `diff` and `merge`.

Adding a check: one `Check` in `CHECKS` (a `judge`, or `reads` with `at_most` for a plain limit on
one figure); nothing else names it. A sweep's checks are entries too, judged by report/sweep.py's
`pass_rate` and `no_new_slower_than_eager` through `report.check.sweep_checks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import OptionError, UsageError
from ..report.check import BASELINE, REPORT, baseline_checks, checks, run_checks
from ..report.outcome import CheckResult, counted, gate_exit_code
from .saved import load_saved

if TYPE_CHECKING:
    from ..report.model import Report

__all__ = ["check", "exit_code", "load_saved", "limits"]

exit_code = gate_exit_code


def limits(scope: str | None = None) -> list[str]:
    """The keywords `check` takes (of one scope: "report", "baseline", "sweep"), in the table's
    order."""
    return [c.key for c in checks(scope)]


def check(
    report: Report,
    baseline: Report | None = None,
    *,
    inconclusive: str = "fail",
    compile_remedies: bool = False,
    **given: Any,
) -> list[CheckResult]:
    """`report` judged as `tcdoctor check --report` judges it: one CheckResult per limit given
    (keywords: `limits("report")`, e.g. max_graph_breaks=0, min_speedup=1.1; with `baseline`,
    also `limits("baseline")`, e.g. max_slowdown=10), in the table's order, a failed phase always
    failing; each inconclusive one's reason says how `inconclusive` ("fail" or "pass") counts it,
    and `exit_code(results, inconclusive)` is the command's exit code. An unknown keyword is an
    OptionError (a ValueError naming the known ones); a regression limit without a baseline, a
    UsageError."""
    scope = {c.key: c.scope for c in checks()}
    unknown = [k for k in given if scope.get(k) not in (REPORT, BASELINE)]
    if unknown:
        raise OptionError(
            f"no check takes {', '.join(unknown)} "
            f"(limits: {', '.join(limits(REPORT) + limits(BASELINE))})"
        )
    regressions = {k: v for k, v in given.items() if scope[k] == BASELINE}
    if baseline is None and any(v is not None for v in regressions.values()):
        raise UsageError(f"{', '.join(regressions)}: a regression limit needs a baseline report")
    mine = {k: v for k, v in given.items() if scope[k] == REPORT}
    results = run_checks(report, compile_remedies, **mine)
    if baseline is not None:
        results += baseline_checks(report, baseline, **regressions)
    return counted(results, inconclusive)
