"""Adding a figure touches its data and its one description, and no renderer.

The outlines (render/outline.py) give each section's builder its phase's whole record (or the
sweep, or the diff), and the renderers (terminal.py, markdown.py, html.py with report.html.j2 and
page.html.j2) only iterate them. So a new figure is recorded by its phase (here: a key of the
phase's report section, which the record keeps as a field would hold it) and shown by:

- in the report, its section's builder (here: wrapped in the test, as the edit would change it):
  it appears in exactly the formats the outline says draw that section, the graph breaks' in all
  three, the compile time's in the HTML only; a key-figure tile is one row of `figures.tiles`;
- in a sweep's overview, one column of render/sweep.py's `COLUMNS`, the row having it from the
  target's report (report/sweep.py `row_from_report`, one field): every format's table;
- in a diff, one entry of report/diff.py's `FIGURES`: its JSON and every format.

Nothing else is edited for it; without the edit it appears nowhere. No analysis runs.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import pathlib
import re

import pytest
from conftest import ROOT

from tcdoctor import units
from tcdoctor.render import breaks, figures, measured
from tcdoctor.render import sweep as sweep_view
from tcdoctor.render.html import HtmlRenderer
from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.outline import HTML, MARKDOWN, TERMINAL, outline
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report import diff as diff_data
from tcdoctor.report import sweep as sweep_data
from tcdoctor.report.layout import Note, Row
from tcdoctor.report.model import Report

SAVED = os.path.join(ROOT, "tests", "data", "schema1_two_breaks.json")
FIGURE = "planted_gadgets"
RENDERERS = {
    TERMINAL: TerminalRenderer(),
    MARKDOWN: MarkdownRenderer(),
    HTML: HtmlRenderer(),
}


@dataclasses.dataclass(frozen=True)
class Case:
    """A phase's report section, its builder (module, function, the record among its arguments),
    and the outline's name of the section it builds."""

    phase: str
    module: object
    builder: str
    record: object  # args -> the phase's record
    placed: str


CASES = [
    Case("graph_breaks", breaks, "section", lambda report: report.graph_breaks, "breaks"),
    Case("compile", measured, "compile_section", lambda record: record, "compile"),
]


def _report(case: Case) -> Report:
    """The saved report, its phase having recorded the planted figure."""
    data = Report.load(SAVED).to_dict()
    data[case.phase][FIGURE] = 7
    return Report.from_dict(data)


def _edit_the_builder(case: Case, monkeypatch) -> None:
    """The one edit the figure needs: its section's builder shows it (a row and a line)."""
    original = getattr(case.module, case.builder)

    def grown(*args, **kwargs):
        sec = original(*args, **kwargs)
        n = case.record(*args).extra[FIGURE]
        row = Row("planted gadgets", units.count(n), "counted by hand")
        return dataclasses.replace(
            sec.with_row(row), notes=(*sec.notes, Note(f"{n} gadgets, planted"))
        )

    monkeypatch.setattr(case.module, case.builder, grown)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.phase)
def test_a_figure_added_to_a_phase_shows_where_its_section_does(case, monkeypatch):
    report = _report(case)
    assert report.to_dict()[case.phase][FIGURE] == 7  # the phase's record keeps it
    assert not any("planted gadgets" in r.render(report) for r in RENDERERS.values())
    _edit_the_builder(case, monkeypatch)
    (placed,) = [p for p in outline(report) if p.name == case.placed]
    assert placed.section.rows[-1].label == "planted gadgets"
    for fmt, renderer in RENDERERS.items():
        text = renderer.render(report)
        shown = "planted gadgets" in text and "7 gadgets, planted" in text
        assert shown is (fmt in placed.formats), (case.placed, fmt)
    assert case.placed != "breaks" or placed.formats == {TERMINAL, MARKDOWN, HTML}
    assert case.placed != "compile" or placed.formats == {HTML}


def test_the_outline_sees_a_builder_edited_after_import(monkeypatch):
    """The control: the outline calls each builder through its module (no reference taken at
    import), so the edit above is the one the outline draws."""
    case = CASES[0]
    _edit_the_builder(case, monkeypatch)
    sec = next(p.section for p in outline(_report(case)) if p.name == "breaks")
    assert any(n.text == "7 gadgets, planted" for n in sec.notes)


def test_a_key_figure_tile_is_one_row(monkeypatch):
    """A tile added to `figures.tiles` is drawn among the HTML's tiles, above its folds; the
    terminal and the Markdown, which have the key-figure table instead, do not show it."""
    report = _report(CASES[0])
    original = figures.tiles
    tile = Row("planted gadgets", "7", "counted by hand")
    monkeypatch.setattr(figures, "tiles", lambda r: original(r).with_row(tile))
    page = RENDERERS[HTML].render(report)
    drawn = '<div class="kpi"><span>planted gadgets</span><b>7</b><span>counted by hand</span>'
    assert drawn in page and page.index(drawn) < page.index("<details")
    assert page.count('<div class="kpi">') == len(original(report).rows) + 1
    assert not any("planted gadgets" in RENDERERS[f].render(report) for f in (TERMINAL, MARKDOWN))


def _sweep(report: Report) -> sweep_data.Sweep:
    """A sweep of one target whose report is `report`, and one target that has no report."""
    done = sweep_data.row_from_report("a.py:build", report, 0, 3.0, "a")
    failed = sweep_data.failed_row("b.py:build", 3, "build() raised", 1.0)
    return sweep_data.Sweep(options={"backend": "eager"}, rows=[done, failed])


def test_a_figure_added_to_the_sweep_overview_is_one_column(monkeypatch):
    """The row has the figure from its target's report (one field of the row: here its extra),
    one column shows it: in the terminal's, the Markdown's and the HTML's table, sortable by it,
    blank for the target without a report."""
    report = _report(CASES[0])
    assert not any("planted gadgets" in r.render_sweep(_sweep(report)) for r in RENDERERS.values())
    reads = sweep_data.row_from_report

    def row_from_report(*args, **kwargs):  # the row's edit: the report's figure kept
        row = reads(*args, **kwargs)
        row.extra[FIGURE] = args[1].graph_breaks.extra[FIGURE] * 6
        return row

    monkeypatch.setattr(sweep_data, "row_from_report", row_from_report)
    column = sweep_view.Column(
        "planted gadgets", lambda r: f"{units.count(r.extra[FIGURE])} gadgets", lambda r: 42
    )
    monkeypatch.setattr(sweep_view, "COLUMNS", (*sweep_view.COLUMNS, column))
    sweep = _sweep(report)
    assert sweep_view.cells(sweep.rows[1])[-1] == ""  # no report: blank
    for fmt, renderer in RENDERERS.items():
        text = renderer.render_sweep(sweep)
        assert "planted gadgets" in text and "42 gadgets" in text, fmt
    md = RENDERERS[MARKDOWN].render_sweep(sweep)
    assert "| took | planted gadgets |" in md and "| 3.00 s | 42 gadgets |" in md
    assert '<td data-v="42">42 gadgets</td>' in RENDERERS[HTML].render_sweep(sweep)


def test_a_figure_added_to_the_diff_is_one_entry(monkeypatch):
    """One entry of `FIGURES` (its label, where a report has it, how units.py writes it): the
    diff's JSON has it, and every format's table of figures, with its delta."""
    before, after = _report(CASES[0]), _report(CASES[0])
    after.graph_breaks.extra[FIGURE] = 9
    assert "planted gadgets" not in diff_data.Diff(before, after).to_json()
    entry = ("planted gadgets", lambda r: r.graph_breaks.extra[FIGURE], units.count)
    monkeypatch.setattr(diff_data, "FIGURES", [*diff_data.FIGURES, entry])
    d = diff_data.Diff(before, after)
    row = {"figure": "planted gadgets", "before": "7", "after": "9", "delta": "+2 (+29%)"}
    assert json.loads(d.to_json())["figures"][-1] == row
    for fmt, renderer in RENDERERS.items():
        text = renderer.render_diff(d)
        assert "planted gadgets" in text and "+2 (+29%)" in text, fmt
    assert "| planted gadgets | 7 | 9 | +2 (+29%) |" in RENDERERS[MARKDOWN].render_diff(d)


RENDER = pathlib.Path(ROOT, "tcdoctor", "render")
TEMPLATES = pathlib.Path(ROOT, "templates")


def _imported(path: pathlib.Path) -> dict[str, set[str]]:
    """What a module imports from tcdoctor.render: {module: names}."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.setdefault(node.module, set()).update(a.name for a in node.names)
            else:
                for a in node.names:
                    out.setdefault(a.name, set())
    return out


def test_the_renderers_name_no_section():
    """The renderers import the outline and nothing that builds a section (the terminal also the
    key figures' `decided`, whether a verdict was reached); the page's template includes only the
    one way a section is drawn and the charts."""
    allowed = {"base": {"OutlineRenderer"}, "figures": {"decided"}}
    for name in ("terminal.py", "markdown.py", "html.py"):
        imported = _imported(RENDER / name)
        assert "outline" in imported, name
        for module, names in imported.items():
            if module != "outline":
                assert module in allowed and names <= allowed[module], (name, module, names)
    for name in ("report.html.j2", "page.html.j2"):
        page = (TEMPLATES / name).read_text(encoding="utf-8")
        used = set(re.findall(r'{%\s*(?:import|include|extends|from)\s+"([^"]+)"', page))
        assert used == {"section.html.j2", "charts.html.j2"}, name
    # the control: a builder module the renderers used to import is caught
    assert "breaks" in _imported(RENDER / "outline.py")
