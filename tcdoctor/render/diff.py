"""A diff of two reports (report/diff.py `Diff`), described once (report/layout.py) for every
format: the key figures before and after with their deltas, the breaks fixed and introduced, and
the serving and generation sections' figures (report/diff_serving.py), and the regressions
judged. render/outline.py places them (`diff_page`); the terminal, the Markdown
and the HTML draw them as they draw a report's sections, with no renderer of their own.

A figure added to the diff is one entry of report/diff.py's `FIGURES` (its JSON has it too);
nothing here is edited for it. Pitfall: a break's place is a `Text` (report/layout.py `where`),
so the terminal prints its file name without the folders, the files the whole path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..report.diff import Diff
from ..report.diff_serving import SectionDiff
from ..report.layout import Note, Section, Table, notes, where

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


SECTION_TITLES = {"serving": "Serving", "generation": "Generation"}
HAS = {"serving": "replayed traffic (a serving section)", "generation": "has a generation section"}
SECTION_HOW = (
    "Each figure is the report's own (the section's records, as the report draws it); the change "
    "of two point figures is only their difference, never 'faster' (two reports, two processes, "
    "no interval between them); an interval and its words (faster, slower, inside the noise) are "
    "each report's own comparison, within that report."
)


def only_line(s: SectionDiff) -> str:
    """The one line of a section one report has and the other does not."""
    return f"{s.name}: only the {s.only} report {HAS[s.name]}; not compared"


def section_figures(s: SectionDiff) -> Section:
    """One section's figures before and after with their change, or the one line saying which
    report alone has it."""
    if s.only is not None:
        return Section(SECTION_TITLES[s.name], notes=notes([only_line(s)]))
    rows = [[r["figure"], r["before"], r["after"], r["delta"]] for r in s.rows]
    return Section(
        SECTION_TITLES[s.name],
        tables=(Table(("figure", "before", "after", "delta"), rows),),
        notes=(Note(SECTION_HOW, how=True),),
    )


def sections(d: Diff) -> list[tuple[str, Section]]:
    """(name, section) of the serving and generation sections either report has."""
    return [(s.name, section_figures(s)) for s in d.sections]


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
