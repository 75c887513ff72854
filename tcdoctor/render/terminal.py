"""Short terminal summary: the verdict, then every section the outline (render/outline.py) gives
the terminal, each drawn from its one description (report/layout.py): the key figures, the top
findings, the compile table, the strategies, the ranks of a distributed run, the structured compile
log. The outline leaves out the break-even, per-graph and environment sections (the key figures
carry the break-even and the graph count; the first line names the environment). A page that is
not a report (a sweep's overview, a diff: outline.py's `Page`) is its title and its sections,
drawn the same way."""

from __future__ import annotations

from dataclasses import dataclass

from tabulate import tabulate

from .. import units
from ..report.layout import Section, short
from ..report.model import Report
from .base import OutlineRenderer
from .figures import decided
from .outline import TERMINAL, Page, Placed, drawn, outline


@dataclass(frozen=True)
class TerminalRenderer(OutlineRenderer):
    """The summary `tcdoctor analyze` and `tcdoctor report` print; `limit` caps the graph breaks,
    recompiles and compiled frames listed (the JSON and HTML reports have them all)."""

    name = "terminal"
    limit: int = 5

    def render(self, report: Report) -> str:
        env, v = report.environment, report.verdict
        lines = [
            f"tcdoctor: {report.target}  (torch {env.get('torch', '?')}, {env.get('device', '?')}, "
            f"backend {report.options.get('backend')}, {units.threads(env)})",
        ]
        if decided(v):
            lines += ["", f"VERDICT: {units.decision_text(v.decision)}"]
            lines += [f"  - {r}" for r in v.reasons]
        lines += self._sections(outline(report))
        for e in report.errors:
            lines.append(f"ERROR in phase {e.phase}: {e.message}")
        return "\n".join(lines)

    def page(self, page: Page) -> str:
        return "\n".join([page.title, *page.lead, *self._sections(page.placed)])

    def _sections(self, placed: list[Placed] | tuple[Placed, ...]) -> list[str]:
        """Every section the outline gives the terminal, in order."""
        lines: list[str] = []
        for p in drawn(placed, TERMINAL):
            lines += draw(p.section, self.limit if TERMINAL in p.cut else None, p.titled)
        return lines


def _rows(sec: Section) -> str:
    """A section's key-figure rows: label and value (how each was measured is in the files)."""
    return tabulate([[r.label, r.value] for r in sec.rows], tablefmt="simple")


def draw(sec: Section | None, limit: int | None = None, titled: bool = True) -> list[str]:
    """A section's description (report/layout.py) as terminal lines: its title, its rows and
    tables (file names only, no detail columns; a table that can say '… and N more' cut at
    `limit` rows), its lines, without those that say how it was measured (the JSON, Markdown
    and HTML have them), and its diff, indented; untitled (`titled=False`), its rows and lines
    stand alone, unindented. A section with a count is headed 'Title: N'."""
    if sec is None or not _shown(sec):
        return []
    heading = sec.counted if sec.count is not None else f"{sec.title}:"
    out = ["", heading] if titled else [""]
    out += [_rows(sec)] if sec.rows else []
    for t in sec.tables:
        if not t.rows:
            continue
        cut = limit if t.more is not None and limit is not None else len(t.rows)
        keep = [i for i in range(len(t.headers)) if i not in t.detail]
        cells = [[short(row[i]) for i in keep] for row in t.rows[:cut]]
        out.append(tabulate(cells, headers=[t.headers[i] for i in keep], tablefmt="simple"))
        more = t.more(cut) if t.more is not None else None
        out += [f"  {more}"] if more else []
    indent = "  " if titled else ""
    out += [f"{indent}{short(n.text)}" for n in sec.notes if not n.how]
    return out + [f"    {line}" for line in sec.diff.splitlines()]


def _shown(sec: Section) -> bool:
    """Whether the terminal has anything of a section to draw (how it was measured is not)."""
    tables = any(t.rows for t in sec.tables)
    said = sec.count is not None or sec.diff or any(not n.how for n in sec.notes)
    return bool(sec.rows or tables or said)
