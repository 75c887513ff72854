"""Short terminal summary: verdict, key figures, the top findings, the ranks of a distributed run,
the structured compile log. Each section is drawn from its one description (report/layout.py);
the break-even, per-graph and environment sections are left out (the key figures carry the
break-even and the graph count; the first line names the environment)."""

from __future__ import annotations

from dataclasses import dataclass

from tabulate import tabulate

from .. import units
from ..report import phases
from ..report.layout import Section, short
from ..report.model import Report
from . import breaks, compile_table, figures, patches, ranks, remedy_table, trace
from .base import Renderer
from .strategies import sections as strategy_sections


@dataclass(frozen=True)
class TerminalRenderer(Renderer):
    """The summary `tcdoctor analyze` and `tcdoctor report` print; `limit` caps the graph breaks,
    recompiles and compiled frames listed (the JSON and HTML reports have them all)."""

    name = "terminal"
    limit: int = 5

    def render(self, report: Report) -> str:
        env, v, limit = report.environment, report.verdict, self.limit
        lines = [
            f"tcdoctor: {report.target}  (torch {env.get('torch', '?')}, {env.get('device', '?')}, "
            f"backend {report.options.get('backend')}, {units.threads(env)})",
            "",
        ]
        if figures.decided(v):
            lines.append(f"VERDICT: {units.decision_text(v.decision)}")
            lines += [f"  - {r}" for r in v.reasons]
            lines.append("")
        lines.append(_rows(figures.section(report)))
        lines += draw(breaks.section(report.graph_breaks.unique), limit)
        for sec in patches.sections(report):
            lines += draw(sec)
        lines += draw(compile_table.section(report.compile.graphs, report.compile.isa_probe), limit)
        lines += _remedy_lines(report)
        for sec in phases.layouts(report):
            lines += draw(sec)
        lines += draw(breaks.recompiles_section(report.recompiles), limit)
        for sec in strategy_sections(report):
            lines += draw(sec)
        lines += draw(ranks.section(report.distributed))
        lines += draw(trace.section(report.torch_trace))
        for e in report.errors:
            lines.append(f"ERROR in phase {e['phase']}: {e['message']}")
        return "\n".join(lines)


def _rows(sec: Section) -> str:
    """A section's key-figure rows: label and value (how each was measured is in the files)."""
    return tabulate([[r.label, r.value] for r in sec.rows], tablefmt="simple")


def draw(sec: Section | None, limit: int | None = None) -> list[str]:
    """A section's description (report/layout.py) as terminal lines: its title, its rows and
    tables (file names only, no detail columns; a table that can say '… and N more' cut at
    `limit` rows), its lines, without those that say how it was measured (the JSON, Markdown
    and HTML have them), and its diff, indented."""
    if sec is None or not _shown(sec):
        return []
    out = ["", f"{sec.title}:"] + ([_rows(sec)] if sec.rows else [])
    for t in sec.tables:
        if not t.rows:
            continue
        cut = limit if t.more is not None and limit is not None else len(t.rows)
        keep = [i for i in range(len(t.headers)) if i not in t.detail]
        cells = [[short(row[i]) for i in keep] for row in t.rows[:cut]]
        out.append(tabulate(cells, headers=[t.headers[i] for i in keep], tablefmt="simple"))
        more = t.more(cut) if t.more is not None else None
        out += [f"  {more}"] if more else []
    out += [f"  {short(n.text)}" for n in sec.notes if not n.how]
    return out + [f"    {line}" for line in sec.diff.splitlines()]


def _shown(sec: Section) -> bool:
    """Whether the terminal has anything of a section to draw (how it was measured is not)."""
    tables = any(t.rows for t in sec.tables)
    return bool(sec.rows or tables or sec.diff or any(not n.how for n in sec.notes))


def _remedy_lines(report: Report) -> list[str]:
    """Cold, warm and each tried remedy's first call and speed; or why none was tried."""
    line = remedy_table.skipped_line(report)
    return ["", line] if line else draw(remedy_table.section(report))
