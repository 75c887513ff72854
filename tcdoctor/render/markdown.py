"""Markdown for GitHub issue text: the verdict, then every section the outline (render/outline.py)
gives the Markdown, each drawn from its description (report/layout.py): the key table, the advice
folded into <details>, the findings, what was tried and measured; the environment is the one-line
footer, not its section (the HTML draws that). A page that is not a report (a sweep's overview, a
diff, a gate's checks: outline.py's `Page`) is its `##` title, the lines under it and its sections,
drawn the same way.

`_esc` is the Markdown's one escaper: every string any Markdown output holds passes through it
(a cell that is code goes in backticks instead, a link's target through `_href`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from .. import units
from ..report.layout import Section, Table
from ..report.model import Report
from .base import OutlineRenderer
from .outline import MARKDOWN, Page, Placed, drawn, outline


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


def _href(href: str) -> str:
    """A link's target, its spaces and brackets percent-encoded (a relative path stays one)."""
    return quote(href, safe="/#:?=&%")


def _cell(text: str, code: bool, links: bool = False) -> str:
    """A table cell: code in backticks (its '|' escaped: GitHub splits cells on it even inside
    code), else escaped text; with `links`, a cell with a link is one."""
    href = getattr(text, "href", None) if links else None
    if href:
        return f"[{_esc(text)}]({_href(href)})"
    return (_code(text).replace("|", "\\|") if text else "") if code else _esc(text)


def _rows(sec: Section) -> list[str]:
    """A section's key-figure rows as a table: figure, value, how measured (escaped)."""
    return _header(["figure", "value", "how measured"]) + [
        f"| {_esc(r.label)} | {_esc(r.value)} | {_esc(r.how)} |" for r in sec.rows
    ]


def draw(
    sec: Section | None,
    top: int | None = None,
    fold: bool = False,
    titled: bool = True,
    links: bool = False,
) -> list[str]:
    """A section's description (report/layout.py) as Markdown: a heading, its rows and tables
    (escaped; a table that can say '… and N more' cut at `top` rows, or with `fold` its other
    rows folded into <details>; with `links` a cell's link drawn), every line under them, how it
    was measured, and its diff, fenced; untitled (`titled=False`), no heading and its lines as
    paragraphs."""
    if sec is None or sec.empty:
        return []
    heading = f"### {_esc(sec.counted)}" + (f" ({_esc(sec.detail)})" if sec.detail else "")
    out = ["", heading] if titled else []
    out += ["", *_rows(sec)] if sec.rows else []
    more, folded = None, []
    for t in sec.tables:
        cut = top if t.more is not None and top is not None else len(t.rows)
        out += ["", *_table(t, t.rows[:cut], links)] if t.rows else []
        if fold and t.rows[cut:]:
            folded += ["", f"<details><summary>{len(t.rows) - cut} more</summary>", ""]
            folded += [*_table(t, t.rows[cut:], links), "", "</details>"]
        elif t.more is not None:
            more = t.more(cut)
    out += folded + (["", _esc(more)] if more else [])
    if titled:
        lines = [f"- {_esc(n.text)}" for n in sec.notes]
        lines += [f"- how: {_esc(sec.method)}"] if sec.method else []
        out += ["", *lines] if lines else []
    else:
        out += [line for n in sec.notes for line in ("", _esc(n.text))]
        out += ["", f"how: {_esc(sec.method)}"] if sec.method else []
    return out + _fenced(sec.diff)


def placed(p: Placed, top: int) -> list[str]:
    """A section where the outline puts it: cut at `top` rows (the rest folded, where it says
    so), or folded whole into <details> under its title."""
    cut = top if MARKDOWN in p.cut else None
    out = draw(p.section, cut, fold=p.markdown == "rest", titled=p.titled, links=p.links)
    if p.markdown == "whole" and out:
        return ["", f"<details><summary>{_esc(p.section.title)}</summary>", *out, "", "</details>"]
    return out


def _table(t: Table, rows: Sequence[Sequence[str]], links: bool = False) -> list[str]:
    """A table's header and these of its rows."""
    return _header(t.headers) + [
        "| " + " | ".join(_cell(c, i in t.code, links) for i, c in enumerate(row)) + " |"
        for row in rows
    ]


def _fenced(diff: str) -> list[str]:
    """A diff as a fenced block (a longer fence when the diff holds one)."""
    if not diff:
        return []
    fence = "````" if "```" in diff else "```"
    return ["", fence + "diff", diff, fence]


@dataclass(frozen=True)
class MarkdownRenderer(OutlineRenderer):
    """Issue-ready Markdown (`--md`); `top` graph breaks are listed, the rest folded away, and
    the `top` compiled frames that took most of the cold compile time."""

    name = "markdown"
    top: int = 5

    def render(self, report: Report) -> str:
        v = report.verdict
        out = [f"## tcdoctor: {_esc(units.decision_text(v.decision))}", ""]
        out += [f"- {_esc(r)}" for r in v.reasons]
        for p in drawn(outline(report), MARKDOWN):
            out += placed(p, self.top)
        for e in report.errors:
            out.append(f"\n> **Error in {_esc(e.phase)}:** {_esc(e.message)}")
        env = report.environment
        out += [
            "",
            f"<sub>tcdoctor {_esc(report.tool.get('version'))}, torch {_esc(env.get('torch'))}, "
            f"{_esc(env.get('device'))}, backend {_esc(report.options.get('backend'))}, "
            f"{_esc(units.threads(env))}; `tcdoctor analyze {_esc(report.target)}`</sub>",
            "",
        ]
        return "\n".join(out)

    def page(self, page: Page) -> str:
        out = [f"## {_esc(page.title)}"]
        out += ["", *(_esc(line) for line in page.lead)] if page.lead else []
        for p in drawn(page.placed, MARKDOWN):
            out += placed(p, self.top)
        return "\n".join(out) + "\n"
