"""What judges a report: the gate's checks (`tcdoctor check`), and the same checks in Python
(`check`, `limits`, `exit_code`). Torch-free; below the renderers and the verdict, above the
report's data (tests/test_imports.py).

Each check is declared once, as one entry of the table `table.CHECKS` (its limit's keyword and
flag, how the flag is typed, what it reads, how it judges; see `table.Check`). The judges live
apart from the table: one report's in judges.py, a report against its baseline in regression.py
(and what makes a baseline another measurement), a sweep's overview in sweep.py, the accepted
graph breaks in known_breaks.py; what a judged check is (`CheckResult`, the gate's exit code and
its lines) in outcome.py; what `check TARGET` asks of the analysis's timing loop in questions.py.
tcdoctor/commands/ makes from the table the click options of `check`, its refusals and its
outputs.

Adding a check: one `Check` in `CHECKS` (a `judge`, or `reads` with `at_most` for a plain limit on
one figure); nothing else names it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import OptionError, UsageError
from .outcome import CheckResult, counted, gate_exit_code
from .table import BASELINE, REPORT, baseline_checks, checks, run_checks

if TYPE_CHECKING:
    from ..report.model import Report

__all__ = ["check", "exit_code", "limits"]

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
