"""A report section's layout, described once: its title, its rows (label, value, how measured), its
tables (headers and rows of cells), and the lines under them. Torch-free, format-free.

Every format draws the same description: the terminal (`render/terminal.py`: a tabulate table,
file names without their folders, no method lines), the Markdown (`render/markdown.py`: escaped
cells, Markdown tables, every line) and the HTML (`templates/section.html.j2`, which iterates it).
A section's builder (render/figures.py, breaks.py, patches.py, compile_table.py, remedy_table.py,
strategies.py, ranks.py, trace.py (the structured compile log), measured.py, sweep.py (a sweep's
overview), diff.py (a diff), or a phase's own `Phase.layout` in report/phases/, as
memory_graphs.py and drift.py) says what it shows once; a row
added there shows in every format that draws the section. Which sections there are, in which
order, which formats draw each and where each folds is said once too, by `render/outline.py`
(the terminal leaves out break_even.py's and graphs.py's, whose figures it has as key figures;
the terminal and the Markdown leave out environment.py's, whose environment their first or last
line names). Each figure is still written by `units.py`.

Pitfalls: a cell or line that names a file carries its short form for the terminal (`Text`), so
the builder, not the drawer, decides what may be shortened; a `Text` with an `href` (a local file
the HTML links to, relative to the HTML's folder, or a web page such as PyTorch's page on a graph
break) is a link in the HTML only: the terminal and the Markdown print its text (the path, since a
link to a local file in a pasted issue would point nowhere; a web page's text is its address); a line that
says how a figure was measured is a `Note(..., how=True)`: the terminal leaves it out (it shows
figures; the method stays in the JSON, Markdown and HTML).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import units


class Text(str):
    """A cell or line, with the shorter form the terminal prints (file names without folders) and
    the link the HTML draws around it (`href`: a local file's, already relative to the HTML's
    folder by `units.relative_link`, or a web page's). A str method (`replace`, `+`) returns a
    plain str: both go."""

    short: str
    href: str | None

    def __new__(cls, full: str, short: str | None = None, href: str | None = None) -> Text:
        text = super().__new__(cls, full)
        text.short = full if short is None else short
        text.href = href
        return text


def where(file: str | None, line: int | None) -> Text:
    """'path/to/file.py:12', the terminal's form 'file.py:12' (a file's line, in every table)."""
    if not file:
        return Text(units.NA)
    at = f":{line}" if line is not None else ""
    return Text(f"{file}{at}", f"{os.path.basename(file)}{at}")


def short(text: str) -> str:
    """The terminal's form of a cell or line: its `Text.short`, else the text itself."""
    return getattr(text, "short", text)


@dataclass(frozen=True)
class Row:
    """A key figure: its label, its value (units.py's text), how it was measured (a tile's line
    under its value); `alarm`: that line is a warning the reader must not miss ("limit hit"),
    which the HTML marks."""

    label: str
    value: str
    how: str = ""
    alarm: bool = False


@dataclass(frozen=True)
class Note:
    """A line under a section's tables; `how`: it says how the figures were measured."""

    text: str
    how: bool = False


@dataclass(frozen=True)
class Table:
    """Headers and rows of cells (text); `code`: the columns (0-based) that hold code or a path,
    shown as code where a format can; `detail`: the columns the terminal leaves out (it stays
    narrow; the Markdown and HTML show them); `more`: the '… and N more' line when only the first
    `shown` rows are drawn (a format that draws them all never asks); `sort`: each row's values
    to sort by, one per column (None sorts last), for a table the HTML sorts by a click on a
    column (None: not sortable); `states`: each row's state ("failed", "incomplete"), which the
    HTML's sortable table colours."""

    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    code: tuple[int, ...] = ()
    detail: tuple[int, ...] = ()
    more: Callable[[int], str | None] | None = None
    sort: Sequence[Sequence[Any]] | None = None
    states: Sequence[str] = ()


@dataclass(frozen=True)
class Section:
    """One section of the report as every format draws it.

    `title`: its heading; `detail`: what the Markdown and HTML heading adds in parentheses
    ("2 of 2"); `summary`: its one-line figure (the HTML heading says it; the key-figure table
    carries it as a `Row`); `rows`, `tables`, `notes`: what it shows, in that order; `method`:
    how it was measured, as one line (Markdown "how: …", HTML "How: …"; not the terminal);
    `diff`: a unified diff drawn as it is, last (the terminal indents it, the Markdown fences
    it, the HTML puts it in a <pre>); `count`: how many things it lists, said after its title
    by every format ("Regressions: 1"), so a section with a count is drawn even when it lists
    none."""

    title: str
    detail: str = ""
    summary: str = ""
    count: int | None = None
    rows: tuple[Row, ...] = ()
    tables: tuple[Table, ...] = ()
    notes: tuple[Note, ...] = ()
    method: str = ""
    diff: str = ""

    @property
    def heading(self) -> str:
        """'Recompiles (3): RECOMPILE LIMIT HIT': its title, detail and summary, as the HTML's
        headings and folds say it (the terminal and the Markdown name it by title and detail);
        a count comes after the title ('Regressions: 1')."""
        return (
            self.counted
            + (f" ({self.detail})" if self.detail else "")
            + (f": {self.summary}" if self.summary else "")
        )

    @property
    def counted(self) -> str:
        """Its title, and its count after it when it has one: 'Regressions: 1'."""
        return self.title + (f": {self.count}" if self.count is not None else "")

    def with_row(self, row: Row) -> Section:
        """This section with one more key-figure row (a phase's own row, a test's planted one)."""
        return replace(self, rows=(*self.rows, row))

    @property
    def empty(self) -> bool:
        """Nothing to draw: no rows, no table rows and no lines (and no count to say)."""
        tables = any(t.rows for t in self.tables)
        said = self.count is not None or self.method or self.diff
        return not (self.rows or tables or self.notes or said)


def notes(lines: Sequence[str], how: bool = False) -> tuple[Note, ...]:
    """Lines as notes, all of one kind."""
    return tuple(Note(line, how) for line in lines)
