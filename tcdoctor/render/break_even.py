"""Break-even, described once (report/layout.py): the calls after which compiling has repaid its
first call, with a cold and a warm cache, and the wall time until then; whether the cold cache
pays back within each horizon (an epoch, a server's requests) and within the calls you expect
(`--expected-calls`); how the calls were counted. Read from `report.verdict.break_even` as the
verdict wrote it (verdict/__init__.py, report/rules.py `break_even`). The HTML draws its chart
above it (render/charts.py); the Markdown draws it too; the terminal has its one figure as a key
figure instead.

Pitfall: a compiled call that is not faster than the eager one never repays its compile time, so
there is no break-even at all: one line says so (also when speed was not measured).
"""

from __future__ import annotations

from typing import Any

from .. import units
from ..report.layout import Note, Section, Table
from ..report.model import Report

TITLE = "Break-even"
HOW = "calls = ceil((first-call time − one eager call) / (eager median − compiled median))."
NONE = "No break-even: the compiled model is not faster per call (or speed was not measured)."


def _pays_back(calls: int, horizon: Any) -> str:
    """'yes' when the cold cache repays its compile within `horizon` calls; '' without a horizon."""
    if horizon is None:
        return ""
    return "yes" if calls <= horizon else "no"


def section(report: Report) -> Section:
    """The cold and warm break-even, the horizons and the expected calls; or why there is none."""
    be = report.verdict.break_even or {}
    cold = be.get("cold")
    if not cold:
        return Section(TITLE, notes=(Note(NONE),))
    repay = Table(
        ("", "calls to repay compile", "wall time until then"),
        [
            [f"{k} cache", units.grouped(be[k]["calls"]), units.seconds(be[k]["wall_s"])]
            for k in ("cold", "warm")
            if be.get(k)
        ],
    )
    expected = be.get("expected_calls")
    horizons = [
        *((name, n) for name, n in (be.get("horizons") or {}).items()),
        ("your expected calls", expected),
    ]
    within = Table(
        ("horizon", "calls", "pays back (cold)?"),
        [[name, units.grouped(n), _pays_back(cold["calls"], n)] for name, n in horizons],
    )
    return Section(TITLE, tables=(repay, within), notes=(Note(HOW, how=True),))
