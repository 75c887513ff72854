"""A diff of two reports (report/diff.py `Diff`), described once (report/layout.py) for every
format: the key figures before and after with their deltas, the breaks fixed and introduced, and
the regressions judged. render/outline.py places them (`diff_page`); the terminal, the Markdown
and the HTML draw them as they draw a report's sections, with no renderer of their own.

A figure added to the diff is one entry of report/diff.py's `FIGURES` (its JSON has it too);
nothing here is edited for it. Pitfall: a break's place is a `Text` (report/layout.py `where`),
so the terminal prints its file name without the folders, the files the whole path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..report.diff import Diff
from ..report.layout import Section, Table, notes, where

if TYPE_CHECKING:
    from ..report.sections import GraphBreak

FIGURES, FIXED, INTRODUCED, REGRESSIONS = (
    "Figures",
    "Graph breaks fixed",
    "Graph breaks introduced",
    "Regressions",
)


def title(d: Diff) -> str:
    return f"tcdoctor diff: {d.before.target} → {d.after.target}"


def lead(d: Diff) -> tuple[str, ...]:
    """The line under the title: the torch of each report."""
    return (f"torch {d.torch[0]} → {d.torch[1]}",)


def figures(d: Diff) -> Section:
    """Each key figure before and after, and its delta."""
    rows = [[r["figure"], r["before"], r["after"], r["delta"]] for r in d.figures]
    return Section(FIGURES, tables=(Table(("figure", "before", "after", "delta"), rows),))


def breaks(heading: str, found: Sequence[GraphBreak]) -> Section:
    """The breaks fixed or introduced: their count, then where each is and why."""
    rows = [[where(f.file, f.line), f.reason or ""] for f in found]
    return Section(heading, count=len(found), tables=(Table(("where", "reason"), rows, code=(0,)),))


def regressions(d: Diff) -> Section | None:
    """How many regressions were found, one line each, then the checks that could not judge;
    none when no check ran."""
    if not d.found:
        return None
    lines = [f"{r.name}: {r.reason}" for r in d.regressions]
    lines += [f"not judged: {r.name}: {r.reason}" for r in d.not_judged]
    return Section(REGRESSIONS, count=len(d.regressions), notes=notes(lines))
