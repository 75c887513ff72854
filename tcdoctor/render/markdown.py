"""Markdown for GitHub issue text: verdict, key table, every section drawn from its description
(report/layout.py), the advice in <details>; the environment is the one-line footer, not its
section (the HTML draws that)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import units
from ..report import phases
from ..report.layout import Section, Table
from ..report.model import Report
from . import (
    break_even,
    breaks,
    compile_table,
    figures,
    graphs,
    measured,
    patches,
    ranks,
    remedy_table,
    trace,
)
from .base import Renderer
from .strategies import sections as strategy_sections


def _esc(text: object) -> str:
    """Neutralise Markdown/HTML in strings from user code and PyTorch messages."""
    s = str(text if text is not None else "")
    for ch in ("\\", "`", "*", "_", "[", "]", "<", ">", "|", "#"):
        s = s.replace(ch, "\\" + ch)
    return s.replace("\n", " ")


def _code(text: object) -> str:
    s = str(text or "").replace("\n", " ").replace("`", "'")
    return f"`{s}`" if s else ""


def _header(headers: list[str] | tuple[str, ...]) -> list[str]:
    """A Markdown table's header and rule (an empty header is one space: '| |')."""
    return [
        "|" + "|".join(f" {h} " if h else " " for h in headers) + "|",
        "|" + "---|" * len(headers),
    ]


def _cell(text: str, code: bool) -> str:
    """A table cell: code in backticks (its '|' escaped: GitHub splits cells on it even inside
    code), else escaped text."""
    return (_code(text).replace("|", "\\|") if text else "") if code else _esc(text)


def _rows(sec: Section) -> list[str]:
    """A section's key-figure rows as a table: figure, value, how measured (escaped)."""
    return _header(["figure", "value", "how measured"]) + [
        f"| {_esc(r.label)} | {_esc(r.value)} | {_esc(r.how)} |" for r in sec.rows
    ]


def draw(sec: Section | None, top: int | None = None, fold: bool = False) -> list[str]:
    """A section's description (report/layout.py) as Markdown: a heading, its rows and tables
    (escaped; a table that can say '… and N more' cut at `top` rows, or with `fold` its other
    rows folded into <details>), every line under them, how it was measured, and its diff,
    fenced."""
    if sec is None or sec.empty:
        return []
    out = ["", f"### {_esc(sec.title)}" + (f" ({_esc(sec.detail)})" if sec.detail else "")]
    out += ["", *_rows(sec)] if sec.rows else []
    more, folded = None, []
    for t in sec.tables:
        cut = top if t.more is not None and top is not None else len(t.rows)
        out += ["", *_table(t, t.rows[:cut])] if t.rows else []
        if fold and t.rows[cut:]:
            folded += ["", f"<details><summary>{len(t.rows) - cut} more</summary>", ""]
            folded += [*_table(t, t.rows[cut:]), "", "</details>"]
        elif t.more is not None:
            more = t.more(cut)
    out += folded + (["", _esc(more)] if more else [])
    lines = [f"- {_esc(n.text)}" for n in sec.notes]
    lines += [f"- how: {_esc(sec.method)}"] if sec.method else []
    return out + (["", *lines] if lines else []) + _fenced(sec.diff)


def _table(t: Table, rows: Sequence[Sequence[str]]) -> list[str]:
    """A table's header and these of its rows."""
    return _header(t.headers) + [
        "| " + " | ".join(_cell(c, i in t.code) for i, c in enumerate(row)) + " |" for row in rows
    ]


def _fenced(diff: str) -> list[str]:
    """A diff as a fenced block (a longer fence when the diff holds one)."""
    if not diff:
        return []
    fence = "````" if "```" in diff else "```"
    return ["", fence + "diff", diff, fence]


def _remedy_table(report: Report) -> list[str]:
    """Cold, warm and each tried remedy's first call and speed; or why none was tried."""
    line = remedy_table.skipped_line(report)
    return ["", _esc(line)] if line else draw(remedy_table.section(report))


@dataclass(frozen=True)
class MarkdownRenderer(Renderer):
    """Issue-ready Markdown (`--md`); `top` graph breaks are listed, the rest folded away, and
    the `top` compiled frames that took most of the cold compile time."""

    name = "markdown"
    top: int = 5

    def render(self, report: Report) -> str:
        v = report.verdict
        out = [f"## tcdoctor: {_esc(units.decision_text(v.decision))}", ""]
        out += [f"- {_esc(r)}" for r in v.reasons]
        out += ["", *_rows(figures.section(report))]
        out += draw(breaks.section(report.graph_breaks.unique), self.top, fold=True)
        out += draw(graphs.section(report.graphs), self.top)
        for sec in patches.sections(report):
            out += draw(sec)
        out += draw(
            compile_table.section(report.compile.graphs, report.compile.isa_probe), self.top
        )
        out += _remedy_table(report) + draw(break_even.section(report))
        for sec in phases.layouts(report):
            out += draw(sec)
        out += draw(breaks.recompiles_section(report.recompiles))
        for sec in strategy_sections(report):
            out += draw(sec)
        advice = draw(measured.advice_section(v))
        out += (
            ["", "<details><summary>Advice</summary>", *advice, "", "</details>"] if advice else []
        )
        out += draw(ranks.section(report.distributed))
        out += draw(trace.section(report.torch_trace))
        for e in report.errors:
            out.append(f"\n> **Error in {_esc(e['phase'])}:** {_esc(e['message'])}")
        env = report.environment
        out += [
            "",
            f"<sub>tcdoctor {_esc(report.tool.get('version'))}, torch {_esc(env.get('torch'))}, "
            f"{_esc(env.get('device'))}, backend {_esc(report.options.get('backend'))}, "
            f"{_esc(units.threads(env))}; `tcdoctor analyze {_esc(report.target)}`</sub>",
            "",
        ]
        return "\n".join(out)
