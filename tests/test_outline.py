"""The outline (render/outline.py) names each section of a report once, in one order, with the
formats that draw it and where it folds; every format follows it. Saved reports only."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from conftest import ROOT
from markupsafe import escape

from tcdoctor.render.html import HtmlRenderer
from tcdoctor.render.markdown import MarkdownRenderer, _esc
from tcdoctor.render.outline import (
    EVERY,
    FILES,
    HTML,
    HTML_ONLY,
    MARKDOWN,
    TERMINAL,
    drawn,
    folds,
    outline,
)
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report.layout import Section
from tcdoctor.report.model import Report

SAVED = [
    os.path.join(ROOT, "tests", "data", "schema1_two_breaks.json"),
    os.path.join(ROOT, "tests", "data", "compile_graphs_two_breaks.json"),
    os.path.join(ROOT, "tests", "data", "golden", "distributed_two_ranks.json"),
]
INJECT = os.path.join(ROOT, "tests", "data", "schema1_inject.json")  # tried fixes, a patch


def _heads(report: Report) -> dict[str, Callable[[Section], int]]:
    """Where in each format's text a section's heading stands (-1: not there)."""
    html = HtmlRenderer().render(report)
    term, md = TerminalRenderer(limit=100).render(report), MarkdownRenderer(top=100).render(report)

    def in_html(sec: Section) -> int:
        found = [html.find(f"<{tag}>{escape(sec.heading)}</{tag}>") for tag in ("summary", "h2")]
        return max(found) if min(found) < 0 else min(found)

    def in_md(sec: Section) -> int:
        detail = f" ({_esc(sec.detail)})" if sec.detail else ""
        return md.find(f"\n### {_esc(sec.title)}{detail}\n")

    return {TERMINAL: lambda sec: term.find(f"\n{sec.title}:\n"), MARKDOWN: in_md, HTML: in_html}


@pytest.mark.parametrize("path", SAVED, ids=os.path.basename)
def test_each_section_is_placed_once_and_every_format_follows_the_one_order(path):
    report = Report.load(path)
    placed = outline(report)
    titles = [p.section.title for p in placed]
    assert len(titles) == len(set(titles)) > 10, titles
    for fmt, at in _heads(report).items():
        shown = [p for p in drawn(placed, fmt) if p.titled and at(p.section) >= 0]
        where = [at(p.section) for p in shown]
        assert len(shown) >= 3 and where == sorted(where), (fmt, [p.name for p in shown])
        # a section the outline keeps from a format is not in it
        for p in placed:
            if fmt not in p.formats and p.titled:
                assert at(p.section) < 0, (fmt, p.name)


def test_which_formats_draw_which_sections():
    """The terminal has the break-even and the graphs as key figures; only the HTML draws the
    measurements' own sections and the environment; the others are in every format."""
    formats: dict[str, set] = {}
    for path in (*SAVED, INJECT):
        for p in outline(Report.load(path)):
            formats.setdefault(p.name, set()).add(p.formats)
    assert formats["break_even"] == formats["graphs"] == formats["advice"] == {FILES}
    for name in ("speed", "compile", "guards", "memory", "numerics", "profile", "environment"):
        assert formats[name] == {HTML_ONLY}, name
    for name in ("key_figures", "breaks", "compile_frames", "remedies", "tried", "strategies"):
        assert formats[name] == {EVERY}, name
    assert formats["phase"] == formats["ranks"] == formats["trace"] == {EVERY}
    report = Report.load(SAVED[1])
    assert "Break-even" not in TerminalRenderer().render(report)
    assert "\n### Break-even\n" in MarkdownRenderer().render(report)


def test_where_each_section_folds():
    """The HTML: its own <details> or one shared with the sections beside it, open or closed as
    the outline says; the Markdown folds the advice whole."""
    report = Report.load(SAVED[0])
    by_summary = {f.summary: f for f in folds(outline(report))}
    assert not by_summary["Key figures"].open and by_summary["Compile strategies"].open
    strategies = by_summary["Compile strategies"]
    assert not strategies.named and [p.section.title for p in strategies.parts] == [
        "Modes",
        "Regions (depth 1)",
    ]
    breaks = next(f for f in by_summary.values() if f.summary.startswith("Graph breaks"))
    assert breaks.named and breaks.open and [p.name for p in breaks.parts] == ["breaks", "graphs"]
    page = HtmlRenderer().render(report)
    assert "<details><summary>Key figures</summary>" in page
    assert "<details open><summary>Compile strategies</summary>\n<h2>Modes</h2>" in page
    assert f"<details open><summary>{escape(breaks.summary)}</summary>\n<table" in page
    assert "<h2>Graphs</h2>" in page  # not the fold's first: its own heading
    md = MarkdownRenderer().render(report)
    start = md.index("<details><summary>Advice</summary>")
    assert md.index("### Advice", start) < md.index("</details>", start)


def test_the_modes_chart_travels_with_its_section():
    """The strategies' chart (the benchmark article's table as bars) is the Modes section's, drawn
    by the HTML above its table."""
    report = Report.load(SAVED[0])
    modes = next(p for p in outline(report) if p.section.title == "Modes")
    assert modes.chart is not None and modes.chart.kind == "modes"
    assert [r["label"] for r in modes.chart.geometry["rows"]] == ["default", "reduce-overhead"]
    page = HtmlRenderer().render(report)
    start = page.index("<h2>Modes</h2>")
    chart = page.index('aria-label="time per call and memory by way of compiling"', start)
    assert chart < page.index("<table", start)
    assert not any(p.chart for p in outline(report) if p.section.title.startswith("Regions"))


def test_the_key_figure_tiles_are_placed_by_the_outline():
    """The HTML's tiles are a section the outline places (HTML only, above every fold, in none);
    a recompile limit hit marks its tile's line as a warning."""
    report = Report.load(SAVED[0])
    placed = outline(report)
    (tiles,) = [p for p in placed if p.tiles]
    assert tiles.name == "tiles" and tiles.formats == HTML_ONLY and not tiles.titled
    assert all(p is not tiles for f in folds(placed) for p in f.parts)
    page = HtmlRenderer().render(report)
    assert page.count('<div class="kpi">') == len(tiles.section.rows) == 6
    assert page.index('<div class="kpis">') < page.index("<details")
    assert '<span class="pill bad">limit hit</span>' not in page
    report.recompiles.limit_hit = True
    page = HtmlRenderer().render(report)
    assert '<b>0</b><span><span class="pill bad">limit hit</span></span>' in page
