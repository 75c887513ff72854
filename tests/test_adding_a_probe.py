"""Adding a probe touches exactly what CONTRIBUTING.md's "Adding a probe" lists: its measure
(`probes/NAME.py`) and its declaration (`report/phases/NAME.py`: the phase, its record, its
progress label and headline, its key-figure row, its section's layout, its "not measured (why)").

A planted probe is declared here, in the test, as its two modules would declare it, and
registered in this process only. Its finished phase event goes through the parent's real path
(`run/assemble.assemble`, the progress line) with no analysis run, and its row and its table show
in all three formats; a skipped one says "not measured (why)" in all three. Nothing in the package
names it: no renderer, no table in run/, no field of `Report` was edited for it.
"""

from __future__ import annotations

import ast
import io
import json
import pathlib
import re
from dataclasses import dataclass, field

import pytest
from conftest import ROOT

from tcdoctor import units
from tcdoctor.options import Options
from tcdoctor.render.html import HtmlRenderer
from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report import phases
from tcdoctor.report.events import Event
from tcdoctor.report.layout import Note, Row, Section, Table
from tcdoctor.report.phases import IN_PROCESS, Phase
from tcdoctor.report.record import Record
from tcdoctor.run.assemble import assemble
from tcdoctor.run.progress import Progress

NAME = "planted_widgets"


# -- what report/phases/planted_widgets.py would hold --------------------------------------------
@dataclass
class Widgets(Record):
    """The planted probe's section: widgets counted per layer."""

    total: int | None = None
    layers: list = field(default_factory=list)
    method: str | None = None
    not_measured: str | None = None


def _row(w: Widgets) -> tuple[str, str, str]:
    value = f"not measured ({w.not_measured})" if w.not_measured else units.count(w.total)
    return ("planted widgets", value, w.method or "")


def _layout(w: Widgets) -> Section:
    if w.not_measured:
        return Section("Planted widgets", notes=(Note(f"not measured ({w.not_measured})"),))
    rows = [[layer["name"], units.count(layer["widgets"])] for layer in w.layers]
    return Section(
        "Planted widgets",
        rows=(Row(*_row(w)),),
        tables=(Table(("layer", "widgets"), rows),),
        notes=(Note(f"method: {w.method}", how=True),),
    )


PLANTED = Phase(
    NAME,
    frozenset({IN_PROCESS}),
    (NAME,),
    measure=f"{__name__}:phase_planted_widgets",  # probes/planted_widgets.py; not run here
    order=126,
    record=Widgets,
    label="planted widgets",
    headline=lambda d: f"{d['total']} widgets" if d.get("total") is not None else None,
    row=_row,
    layout=_layout,
)
RESULT = {
    "total": 7,
    "layers": [{"name": "stemlayer", "widgets": 3}, {"name": "headlayer", "widgets": 4}],
    "method": "widgets counted by hand",
}


@pytest.fixture
def planted():
    with phases.registering(PLANTED):  # this process only; the table as it was comes back
        yield PLANTED


def _events(outcome: str) -> list[Event]:
    end = (
        Event(event="done", phase=NAME, seconds=0.01, data=RESULT)
        if outcome == "done"
        else Event(event="skipped", phase=NAME, why="no widgets on this device")
    )
    return [Event(event="start", phase=NAME), end]


def _three(report) -> tuple[str, str, str]:
    return (
        TerminalRenderer().render(report),
        MarkdownRenderer().render(report),
        HtmlRenderer().render(report),
    )


def test_a_planted_probe_shows_its_row_and_table_in_all_three_formats(planted):
    report = assemble("m.py:build", Options().to_dict(), _events("done"), [])
    assert phases.section(report, NAME) == Widgets(**RESULT)
    term, md, page = _three(report)
    for text in (term, md, page):
        assert "planted widgets" in text and "Planted widgets" in text
        assert "stemlayer" in text and "headlayer" in text
    assert [ln.split() for ln in term.splitlines() if ln.startswith("planted widgets")] == [
        ["planted", "widgets", "7"],  # the key-figure table's row
        ["planted", "widgets", "7"],  # the section's own row
    ]
    assert "| planted widgets | 7 | widgets counted by hand |" in md
    assert "<th>planted widgets</th><td>7</td>" in page
    assert "<td>headlayer</td><td>4</td>" in page
    assert "widgets counted by hand" not in term  # the method: the files, not the terminal


def test_a_skipped_planted_probe_says_why_in_all_three_formats(planted):
    report = assemble("m.py:build", Options().to_dict(), _events("skipped"), [])
    assert phases.section(report, NAME).not_measured == "no widgets on this device"
    for text in _three(report):
        assert "not measured (no widgets on this device)" in text


def test_its_progress_line_comes_from_its_declaration(planted):
    out = io.StringIO()
    progress = Progress(tty=False, file=out)
    progress.feed("cold", _events("done"))
    assert out.getvalue() == "tcdoctor: planted widgets … 7 widgets  [10.00 ms]\n"


def test_without_the_declaration_nothing_of_it_appears():
    report = assemble("m.py:build", Options().to_dict(), _events("done"), [])
    assert NAME not in json.loads(report.to_json())  # no section (its events: a phase row only)
    for text in _three(report):
        assert "planted widgets" not in text.lower()


def test_nothing_in_the_package_names_it():
    """The probe lives in its own two modules (here, this test): no renderer, no table in run/,
    no field of Report lists it."""
    package = pathlib.Path(ROOT) / "tcdoctor"
    named = [p for p in package.rglob("*") if p.is_file() and NAME in p.read_text(errors="ignore")]
    assert named == []


def _members(path: pathlib.Path, cls: str) -> set[str]:
    """A class's annotated fields and methods, and the `self.NAME` it assigns (read, not imported:
    the runner imports torch)."""
    tree = next(
        n
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.ClassDef) and n.name == cls
    )
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            out.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            out.add(node.attr)
    return out


def test_every_member_a_probe_reads_is_typed_and_the_runner_has_it():
    """A probe's `ctx` is `probes.context.PhaseContext`: every `ctx.NAME` read in probes/ is
    declared there, and the runner (run/runner.PhaseRunner) has each member it declares."""
    package = pathlib.Path(ROOT) / "tcdoctor"
    declared = _members(package / "probes" / "context.py", "PhaseContext")
    read = {
        m
        for p in (package / "probes").glob("*.py")
        if p.name != "context.py"  # the Protocol's own docstring
        for m in re.findall(r"\bctx\.(\w+)", p.read_text())
    }
    assert read and read <= declared, sorted(read - declared)
    runner = _members(package / "run" / "runner.py", "PhaseRunner")
    assert declared <= runner, sorted(declared - runner)
