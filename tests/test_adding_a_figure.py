"""Adding a figure to a phase that exists touches the phase and its section, and no renderer.

The outline (render/outline.py) gives each section's builder its phase's whole record, and the
renderers (terminal.py, markdown.py, html.py with report.html.j2) only iterate the outline. So a
new figure is recorded by its phase (here: a key of the phase's report section, which the record
keeps as a field would hold it) and shown by its section's builder (here: wrapped in the test, as
the edit would change it), and it appears in exactly the formats the outline says draw that
section: the graph breaks' in all three, the compile time's in the HTML only. Nothing else is
edited for it; without the builder's edit it appears nowhere. No analysis runs.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import pathlib
import re

import pytest
from conftest import ROOT

from tcdoctor import units
from tcdoctor.render import breaks, measured
from tcdoctor.render.html import HtmlRenderer
from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.outline import HTML, MARKDOWN, TERMINAL, outline
from tcdoctor.render.terminal import TerminalRenderer
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
    allowed = {"base": {"Renderer"}, "figures": {"decided"}}
    for name in ("terminal.py", "markdown.py", "html.py"):
        imported = _imported(RENDER / name)
        assert "outline" in imported, name
        for module, names in imported.items():
            if module != "outline":
                assert module in allowed and names <= allowed[module], (name, module, names)
    page = (TEMPLATES / "report.html.j2").read_text(encoding="utf-8")
    used = set(re.findall(r'{%\s*(?:import|include|extends|from)\s+"([^"]+)"', page))
    assert used == {"section.html.j2", "charts.html.j2"}
    # the control: a builder module the renderers used to import is caught
    assert "breaks" in _imported(RENDER / "outline.py")
