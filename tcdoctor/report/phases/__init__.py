"""The phase registry: every measurement of an analysis, where it runs, and what it fills.

One table, read by both sides: the child (`run/runner.py`) runs the phases of its process in
order, calling each one's `measure`; the parent (`run/assemble.py`) loops over the same table to put
each finished phase's result into its report sections (`fill`), and to say "not measured (why)" in
those sections when it did not finish.

The table is found, not written: every module of this package that defines `PHASES` (a tuple of
`phase.Phase` declarations) is imported, and the phases are sorted by their `order`. Adding a probe
is its measure (`probes/NAME.py`) and its declaration (`report/phases/NAME.py`: its record, progress
headline, key-figure row and section layout, all drawn by every format); nothing else. `register`
adds a declaration from outside the package (a test, a plugin) to this process only: children
import the package's modules.

Processes: "cold" is the first child (empty inductor cache), "warm" a second fresh child on the
same cache, "timing" a timing-only child, "in_process" the Python API's single process.

Torch-free: `tcdoctor report` re-renders saved JSON without importing torch, and the launcher never
imports torch; the declarations name their measure by path, imported only in the child.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any

from ..layout import Row, Section
from .derive import derive
from .phase import COLD, IN_PROCESS, MAIN, TIMING, WARM, Phase, PhaseError, Skip, put

__all__ = [
    "BY_NAME",
    "COLD",
    "IN_PROCESS",
    "MAIN",
    "PHASES",
    "SECTIONS",
    "TIMING",
    "WARM",
    "Phase",
    "PhaseError",
    "Skip",
    "derive",
    "figure_rows",
    "layouts",
    "order",
    "put",
    "register",
    "registering",
    "section",
]


def _declared() -> list[Phase]:
    """Every Phase that a module of this package declares in its `PHASES`."""
    found: list[Phase] = []
    for mod in pkgutil.iter_modules(__path__):
        found += getattr(importlib.import_module(f"{__name__}.{mod.name}"), "PHASES", ())
    return found


PHASES: tuple[Phase, ...] = ()
BY_NAME: dict[str, Phase] = {}
# Every report section some phase fills, in phase order (run/assemble.py starts each empty).
SECTIONS: tuple[str, ...] = ()


def register(*added: Phase) -> None:
    """Add phases to this process's table (and the package's own at import). A name or an order
    already taken is an error: two phases at one position would run in an arbitrary order."""
    global PHASES, BY_NAME, SECTIONS
    table = list(PHASES) + list(added)
    for attr in ("name", "order"):
        values = [getattr(p, attr) for p in table]
        taken = next((v for v in values if values.count(v) > 1), None)
        if taken is not None:
            clash = [p.name for p in table if getattr(p, attr) == taken]
            raise ValueError(f"phases {clash} have the same {attr} ({taken!r})")
    PHASES = tuple(sorted(table, key=lambda p: p.order))
    BY_NAME = {p.name: p for p in PHASES}
    SECTIONS = tuple(dict.fromkeys(s for p in PHASES for s in p.sections))


register(*_declared())


@contextlib.contextmanager
def registering(*added: Phase) -> Iterator[None]:
    """`register` for a while (a test, a notebook): the table as it was comes back on exit."""
    global PHASES, BY_NAME, SECTIONS
    saved = PHASES, BY_NAME, SECTIONS
    try:
        register(*added)
        yield
    finally:
        PHASES, BY_NAME, SECTIONS = saved


def order(process: str) -> tuple[str, ...]:
    """The phases a process runs, in order."""
    return tuple(p.name for p in PHASES if process in p.processes)


def section(report: Any, name: str) -> Any:
    """A report section read typed: the Report's own field, else (a section it has no field for,
    kept in `report.extra`) the record its phase declares, or the dict as saved."""
    if name != "extra" and hasattr(report, name):
        return getattr(report, name)
    raw = report.extra.get(name)
    record = next((p.record for p in PHASES if name in p.sections and p.record), None)
    return record.from_dict(raw) if record is not None and isinstance(raw, dict) else raw


def _filled(report: Any, p: Phase) -> Any:
    """What the phase's row and layout read: its `reads(report)`, else its (first) section as the
    report holds it, typed; None when it has none."""
    if p.reads is not None:
        return p.reads(report)
    return section(report, p.sections[0]) if p.sections else None


def figure_rows(report: Any) -> list[Row]:
    """The key-figure rows of phases that declare one (`Phase.row`), for sections they filled;
    every format's key-figure table shows them."""
    rows = []
    for p in PHASES:
        rec = _filled(report, p)
        row = p.row(rec) if p.row is not None and rec is not None else None
        if row is not None:
            rows.append(Row(*row))
    return rows


def layouts(report: Any) -> list[Section]:
    """The sections phases lay out themselves (`Phase.layout`), for sections they filled, in
    phase order; every format draws them."""
    out = []
    for p in PHASES:
        rec = _filled(report, p)
        sec = p.layout(rec) if p.layout is not None and rec is not None else None
        if sec is not None:
            out.append(sec)
    return out
