"""The judges of a sweep's overview (`check --sweep DIR`): each the `judge` of a sweep `Check` in
the gate's table (checks/table.py `CHECKS`), reading the overview report/sweep.py builds (its rows,
each from its target's own saved report, and their changes against a baseline sweep), never a
figure measured again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import units
from .outcome import CheckResult

if TYPE_CHECKING:  # the overview's classes load where a sweep is judged, not where `check` is built
    from ..report.sweep import Sweep


def pass_rate(sweep: Sweep, min_pass_rate: float) -> CheckResult:
    """`check --sweep --min-pass-rate`: the share of targets analysed without an error, each
    target behind a failure one detail line (the judge of its entry in the gate's table)."""
    rate = sweep.pass_rate
    figure, limit = units.percent(rate), f"≥ {units.percent(min_pass_rate)}"
    return CheckResult(
        "pass rate",
        figure,
        limit,
        rate is not None and rate >= min_pass_rate,
        f"{figure} of {len(sweep.rows)} target(s) ({limit} required)"
        + "".join(f"; {r.target}: {r.status}" for r in sweep.rows if not r.complete),
        details=tuple(
            f"{r.target}: {r.status} (exit {r.exit_code}): {r.reason}"
            for r in sweep.rows
            if not r.complete
        ),
    )


def no_new_slower_than_eager(sweep: Sweep, _on: bool = True) -> CheckResult:
    """`check --sweep --no-new-slower-than-eager`: the rows' changes against the baseline; a sweep
    without a baseline counts every model slower than eager as new (and says so)."""
    if sweep.baseline is None:
        slow = [r.target for r in sweep.rows if r.slower_than_eager]
        how = " (no baseline: every model slower than eager counts as new)"
    else:
        slow = [
            r.target
            for r in sweep.rows
            if any(c["kind"] in ("newly_slower_than_eager", "new_target") for c in r.changes or [])
            and r.slower_than_eager
        ]
        how = f" (against {sweep.baseline})"
    return CheckResult(
        "no model newly slower than eager",
        f"{len(slow)} model(s)",
        "none",
        not slow,
        (", ".join(slow) + " slower than eager" if slow else "none") + how,
        details=tuple(slow),
    )
