"""The environment the report was measured in and each phase's outcome, described once
(report/layout.py): one row per environment key (the workload's keys as `workload.KEY`), then a
table of phases (status, why it did not run, seconds). The HTML draws it; the terminal and the
Markdown name the environment in their header or footer line instead.

Pitfall: environment values are the recorded values written as they are (a dict or list in
Python's own text), not figures; a phase's seconds are units.py's, empty when not timed.
"""

from __future__ import annotations

from .. import units
from ..report.layout import Row, Section, Table
from ..report.model import PhaseStatus, Report

TITLE = "Environment and phases"


def _rows(env: dict) -> tuple[Row, ...]:
    """Every environment key but the workload, then the workload's keys, prefixed."""
    rows = [Row(str(k), str(v)) for k, v in env.items() if k != "workload"]
    rows += [Row(f"workload.{k}", str(v)) for k, v in (env.get("workload") or {}).items()]
    return tuple(rows)


def _phase(name: str, p: PhaseStatus) -> list[str]:
    """A phase's cells: its name, its status (and why), its seconds ('' when not timed)."""
    status = str(p.status) + (f": {p.why}" if p.why else "")
    return [name, status, units.seconds(p.seconds) if p.seconds is not None else ""]


def section(report: Report) -> Section:
    """The environment's rows and the phases' table."""
    phases = Table(("phase", "status", "seconds"), [_phase(k, p) for k, p in report.phases.items()])
    return Section(TITLE, rows=_rows(report.environment), tables=(phases,))
