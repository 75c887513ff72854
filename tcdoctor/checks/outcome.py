"""What a judged check is: a `CheckResult` (the figure it was judged on, its limit, the one line
that says both), and how a gate's results make its exit code and its terminal lines.

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

Pitfall: an unmeasured figure fails its check (a gate must not pass on missing evidence).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from .. import units
from ..errors import EXIT_CHECK_FAILED, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE
from ..outcomes import Status

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
    def status(self) -> Status:
        """PASS, FAIL, INCONCLUSIVE or ERROR: the word the terminal line starts with."""
        if self.error:
            return Status.ERROR
        if self.inconclusive:
            return Status.INCONCLUSIVE
        return Status.PASS if self.passed else Status.FAIL

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


def judged(
    name: str, value: Any, bound: Any, le: bool, show: Callable = str, why: str = "", unit: str = ""
) -> CheckResult:
    """A limit on one figure: `value` at most `bound` when `le` (else at least), written by `show`;
    a missing value (None) fails (an unmeasured figure never passes), its reason saying `why` and
    the limit in its `unit` (" ms")."""
    limit = f"{'≤' if le else '≥'} {bound}"
    if value is None:
        missing = f"{units.NA} ({why})" if why else units.NA
        return CheckResult(name, units.NA, limit, False, f"{missing}, limit {bound}{unit}")
    ok = value <= bound if le else value >= bound
    figure = show(value)
    return CheckResult(name, figure, limit, bool(ok), f"{figure} ({limit} required)")


def judged_in(name: str, value: Any, bound: Any, le: bool, unit: str, why: str) -> CheckResult:
    """`judged` on a figure written to two decimals in `unit` ("ms"), its limit in it too."""
    return judged(name, value, bound, le, lambda v: f"{v:.2f} {unit}", why, f" {unit}")


def level_text(level: float | None) -> str:
    """'95%', or the interval's own level ('98.2%': the headline's Pocock level)."""
    return f"{level * 100:.3g}%" if level and round(level, 4) != 0.95 else "95%"
