"""Break-even, described once (report/layout.py): the calls after which compiling has repaid its
first call, with a cold and a warm cache, and the wall time until then; whether the cold cache
pays back within each horizon (an epoch, a server's requests) and within the calls you expect
(`--expected-calls`); how the calls were counted. Read from `report.verdict.break_even` as the
verdict wrote it (verdict/__init__.py, report/rules.py `break_even`). The HTML draws its chart
above it (render/charts.py); the Markdown draws it too; the terminal has its one figure as a key
figure instead.

Which cold: the cold cache's row is a fresh container's first call (Inductor's CPU ISA probe
included), the one the verdict judges: a CI job, a new container or an autoscaled server pays it.
Where the probe's builds were read, a row beside it gives a machine's that has compiled before
(`verdict.break_even["probed"]`: the probe is paid once per cache folder), and a line says which the
verdict used and why.

Pitfall: a compiled call that is not faster than the eager one never repays its compile time, so
there is no break-even at all: one line says so (also when speed was not measured).
"""

from __future__ import annotations

from typing import Any

from .. import units
from ..report.layout import Note, Section, Table
from ..report.model import Report
from .figures import forward_calls

TITLE = "Break-even"
HOW = "calls = ceil((first-call time − one eager call) / (eager median − compiled median))."
# the repay table's row of each break-even the verdict wrote
ROWS = {"cold": "cold cache", "probed": "cold cache, machine probed", "warm": "warm cache"}
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
            [ROWS[k], units.grouped(be[k]["calls"]), units.seconds(be[k]["wall_s"])]
            for k in ("cold", "probed", "warm")
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
    which = (Note(which_cold(be)),) if be.get("probed") else ()
    forward = forward_calls(report)
    notes = (*which, *((Note(f"Here the calls are {forward}."),) if forward else ()))
    return Section(TITLE, tables=(repay, within), notes=(*notes, Note(HOW, how=True)))


def which_cold(be: dict) -> str:
    """Which cold the verdict judged, and why: a fresh container's, beside a machine's that has
    compiled before."""
    build = be.get("probe_build_s")
    probe = f" ({units.seconds(build)} of builds)" if build is not None else ""
    return (
        "The verdict judges the cold cache as a fresh container pays it, Inductor's CPU ISA "
        f"probe{probe} included: a CI job, a new container or server pays it before its first "
        "result. On a machine that has compiled before (a cache folder Inductor probed once, as "
        "a persistent /tmp/torchinductor_$USER) the cold compile is repaid after "
        f"{units.grouped(be['probed']['calls'])} calls."
    )
