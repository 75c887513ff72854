"""A section is laid out once (report/layout.py) and every format draws that one description.

One saved report (tests/data/compile_graphs_two_breaks.json: the per-frame compile table, the
cold-start remedies) is rendered as terminal text, Markdown and HTML; every cell of the compile
table's description shows in all three (the terminal's file names short, the Markdown's escaped,
the HTML's escaped by Jinja), and what says how a figure was measured stays out of the terminal
only. A row, a table row and a line added to the description (here, in the test) show in all
three formats with no renderer edited. No analysis runs.
"""

from __future__ import annotations

import dataclasses
import os
import re

import pytest
from conftest import ROOT
from markupsafe import escape
from test_renderers import _with_remedy, with_ranks

from tcdoctor.render import compile_table, remedy_table
from tcdoctor.render.html import HtmlRenderer
from tcdoctor.render.markdown import MarkdownRenderer, _cell, _esc
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report.layout import Note, Row, Table, Text, short
from tcdoctor.report.model import Report

SAVED = os.path.join(ROOT, "tests", "data", "compile_graphs_two_breaks.json")


@pytest.fixture
def report() -> Report:
    return Report.load(SAVED)


def _three(report: Report) -> tuple[str, str, str]:
    """The report in the three formats, every row of every table shown (limit, top)."""
    return (
        TerminalRenderer(limit=100).render(report),
        MarkdownRenderer(top=100).render(report),
        HtmlRenderer().render(report),
    )


def test_every_cell_of_one_description_shows_in_all_three_formats(report):
    sec = compile_table.section(report.compile.graphs)
    assert sec is not None and sec.tables and len(sec.tables[0].rows) >= 2
    term, md, page = _three(report)
    for text in (term, md, page):
        assert sec.title in text
    for row in sec.tables[0].rows:
        for cell in row:
            assert short(cell) in term, cell
            assert _esc(cell) in md, cell
            assert str(escape(cell)) in page, cell
    # a file's cell: the terminal prints its name only, the files the whole path
    where = sec.tables[0].rows[0][2]
    assert isinstance(where, Text) and where.short != str(where)
    assert str(where) not in term and where.short in term
    for note in sec.notes:
        assert (short(note.text) in term) is (not note.how), note
        assert _esc(note.text) in md and str(escape(note.text)) in page
    assert sec.method and sec.method not in term
    assert f"- how: {_esc(sec.method)}" in md and f"How: {escape(sec.method)}" in page


def test_a_row_a_table_row_and_a_line_added_to_the_description_show_in_all_three(
    report, monkeypatch
):
    before = _three(report)
    planted = ("planted figure", "42 widgets", "counted by hand")
    cells = ["9/9", "plantedfunc", "planted.py:7", "3", "1.00 s", "2.00 s", "1", "5.0 µs"]

    original = compile_table.section

    def with_planted(graphs, isa_probe=None):
        sec = original(graphs, isa_probe)
        table = sec.tables[0]
        grown = dataclasses.replace(table, rows=[*table.rows, cells])
        return dataclasses.replace(
            sec.with_row(Row(*planted)),
            tables=(grown,),
            notes=(*sec.notes, Note("a planted line")),
        )

    monkeypatch.setattr(compile_table, "section", with_planted)  # the one description, grown
    after = _three(report)
    for old, new in zip(before, after):
        for text in ("planted figure", "42 widgets", "plantedfunc", "a planted line"):
            assert text not in old and text in new, text
    term, md, page = after
    assert "counted by hand" not in term  # how a figure was measured: the files, not the terminal
    assert "| planted figure | 42 widgets | counted by hand |" in md
    assert '<th>planted figure</th><td>42 widgets</td><td class="how">counted by hand</td>' in page
    assert "<td>plantedfunc</td>" in page and "| 9/9 | plantedfunc | planted.py:7 |" in md


def test_the_remedy_table_how_line_stays_out_of_the_terminal_only():
    """A second described section: the cold-start remedies, with one remedy row as an Inductor
    run adds; its rows show in all three, its how line in the Markdown and HTML only."""
    report = _with_remedy()  # the same saved report, with a remedy row (test_renderers.py's)
    sec = remedy_table.section(report)
    how = [n.text for n in sec.notes if n.how]
    assert how == [remedy_table.HOW]
    term, md, page = _three(report)
    for line in how:
        assert line not in term and _esc(line) in md and str(escape(line)) in page
    for row in sec.tables[0].rows:
        assert row[0] in term and _esc(row[0]) in md and str(escape(row[0])) in page
    code = sec.tables[0].rows[-1][5]  # the code column: code in the Markdown and the HTML
    assert f"`{code}`" in md and f"<code>{escape(code)}</code>" in page


def test_a_table_cut_short_says_how_many_more_in_the_terminal_and_the_markdown(report):
    sec = compile_table.section(report.compile.graphs)
    table: Table = sec.tables[0]
    more = table.more(1)
    assert more and more.startswith(f"… and {len(table.rows) - 1} more")
    assert f"  {more}" in TerminalRenderer(limit=1).render(report)
    assert _esc(more) in MarkdownRenderer(top=1).render(report)
    assert more not in HtmlRenderer().render(report)  # the HTML draws every row


def test_the_key_figures_are_one_description_drawn_by_all_three(report):
    """The key-figure table: each row's label and value in all three, its how in the files only."""
    from tcdoctor.render import figures

    sec = figures.section(report)
    assert len(sec.rows) >= 10
    term, md, page = _three(report)
    for row in sec.rows:
        assert row.label in term and row.value in term, row
        assert f"| {_esc(row.label)} | {_esc(row.value)} | {_esc(row.how)} |" in md, row
        assert f"<th>{escape(row.label)}</th><td>{escape(row.value)}</td>" in page, row
    hows = [r.how for r in sec.rows if len(r.how) > 20]
    assert hows and not any(how in term for how in hows)


@pytest.mark.parametrize(
    "path",
    [SAVED, os.path.join(ROOT, "tests", "data", "golden", "distributed_two_ranks.json")],
)
def test_every_described_section_of_a_saved_report_shows_in_all_three(path):
    """Strategies, ranks, the compile and remedy tables: each cell in every format."""
    from tcdoctor.render import ranks, strategies

    rep = Report.load(path)
    described = [
        *strategies.sections(rep),
        ranks.section(rep.distributed),
        compile_table.section(rep.compile.graphs),
        remedy_table.section(rep),
    ]
    described = [s for s in described if s is not None]
    assert described
    term, md, page = _three(rep)
    for sec in described:
        for table in sec.tables:
            keep = [i for i in range(len(table.headers)) if i not in table.detail]
            for row in table.rows:
                for i, cell in enumerate(row):
                    assert (short(cell) in term) or i not in keep, (sec.title, cell)
                    in_md = _cell(cell, i in table.code)  # code or escaped text
                    assert in_md in md and str(escape(cell)) in page, (sec.title, cell)
        for note in sec.notes:
            assert _esc(note.text) in md and str(escape(note.text)) in page, note


# -- what was tried, the breaks, the recompiles, memory growth and drift: one description each ----

INJECT = os.path.join(ROOT, "tests", "data", "schema1_inject.json")


def _cells_in_all_three(sec, term: str, md: str, page: str) -> None:
    """Every cell of a description in every format (the terminal without its detail columns)."""
    for table in sec.tables:
        for row in table.rows:
            for i, cell in enumerate(row):
                assert (short(cell) in term) or i in table.detail, (sec.title, cell)
                assert _cell(cell, i in table.code) in md, (sec.title, cell)
                assert str(escape(cell)) in page, (sec.title, cell)
    for note in sec.notes:
        assert (short(note.text) in term) or note.how, note
        assert _esc(note.text) in md and str(escape(note.text)) in page, note


def test_the_fixes_tried_and_a_source_patch_are_one_description_drawn_by_all_three():
    """The "Tried" table and a source patch (its checks, what it measured, its diff): each part in
    every format, the diff indented in the terminal, fenced in the Markdown, a <pre> in the HTML."""
    from tcdoctor.render import patches

    rep = Report.load(INJECT)
    described = patches.sections(rep)
    titles = [s.title for s in described]
    assert titles[0] == "Tried (no source edit)" and titles[1].startswith("Source patch ")
    term, md, page = _three(rep)
    for sec in described:
        assert short(sec.title) in term and _esc(sec.title) in md
        _cells_in_all_three(sec, term, md, page)
    diff = described[1].diff
    assert diff.startswith("--- a/") and "<script>" in diff  # the injected print, as text
    assert all(f"    {line}" in term for line in diff.splitlines())
    assert f"```diff\n{diff}\n```" in md
    assert f'<pre class="diff">{escape(diff)}</pre>' in page and "<script>document" not in page


def test_a_recompile_planted_in_a_saved_report_shows_in_all_three():
    """The recompiles: one row per event (function and failing guard as code), from one
    description; the terminal leaves out the compile-time column."""
    from tcdoctor.render import breaks

    rep = Report.load(INJECT)
    assert breaks.recompiles_section(rep.recompiles) is None  # none recorded: nothing drawn
    data = rep.to_dict()
    data["recompiles"]["events"] = [
        {
            "function": "forward",
            "variant": "variant 1: <b>x</b>",
            "reason": "x.size()[0] == 8",
            "compile_s": 0.25,
        }
    ]
    data["recompiles"]["count"] = 1
    rep = Report.from_dict(data)
    sec = breaks.recompiles_section(rep.recompiles)
    assert sec is not None and sec.tables[0].rows[0][3] == "250.00 ms"
    term, md, page = _three(rep)
    _cells_in_all_three(sec, term, md, page)
    assert "250.00 ms" not in term and "| `forward` | variant 1: \\<b\\>x\\</b\\> |" in md


def test_the_graph_break_table_folds_in_the_markdown_and_cuts_in_the_terminal():
    """One description of the breaks: the terminal cuts it at `limit` ('… and N more'), the
    Markdown folds the rest into <details>; a column empty in every row is left out."""
    from tcdoctor.render import breaks

    rep = Report.load(os.path.join(ROOT, "tests", "data", "schema1_two_breaks.json"))
    sec = breaks.section(rep)
    assert sec.detail == "2 unique" and list(sec.tables[0].headers) == [
        "where",
        "function",
        "reason",
        "code",
        "explanation",
        "PyTorch's hints",
        "PyTorch's page",
    ]
    term, md, page = _three(rep)
    _cells_in_all_three(sec, term, md, page[: page.index("</body>")])
    assert sec.tables[0].detail == (1, 3, 4, 5, 6) and sec.tables[0].code == (0, 1, 3)
    assert "… and 1 more" in TerminalRenderer(limit=1).render(rep)
    folded = MarkdownRenderer(top=1).render(rep)
    start = folded.index("<summary>1 more</summary>")
    rest = folded[start : folded.index("</details>", start)]
    reason = list(sec.tables[0].headers).index("reason")
    first, second = (_esc(row[reason]) for row in sec.tables[0].rows)
    assert second in rest and first not in rest


UNLOGGED = {"reason": "step_unsupported <b>x</b>", "occurrences": 2, "detail": "step_unsupported"}


@pytest.mark.parametrize("breaks_too", [True, False], ids=["with-breaks", "alone"])
def test_an_unlogged_fallback_shows_in_all_three_formats(breaks_too):
    """What Dynamo could not trace and filed without a graph-break log entry is a line of the
    breaks section, in every format (it was the HTML's alone), also in a report with no logged
    break; a report without one says nothing of it."""
    from tcdoctor.render import breaks

    data = Report.load(os.path.join(ROOT, "tests", "data", "schema1_two_breaks.json")).to_dict()
    before = _three(Report.from_dict(data))
    data["graph_breaks"]["unlogged_fallbacks"] = [UNLOGGED]
    if not breaks_too:
        data["graph_breaks"].update(unique=[], count=0)
    rep = Report.from_dict(data)
    line = next(n.text for n in breaks.section(rep).notes if "without a graph-break log" in n.text)
    assert "step_unsupported <b>x</b> ×2" in line
    term, md, page = _three(rep)
    assert f"  {line}" in term and f"- {_esc(line)}" in md and f"<li>{escape(line)}</li>" in page
    assert "<b>x</b>" not in page  # escaped, as every string
    for text in before:
        assert "without a graph-break log entry" not in text


def test_hints_sites_and_doc_links_are_columns_every_file_format_draws():
    """What the HTML's own break table showed (the function, PyTorch's explanation, its hints and
    its page, a library's line) is the breaks description's: detail columns the Markdown and the
    HTML draw (the page a link in the HTML only), the terminal's table staying narrow."""
    from tcdoctor.render import breaks

    data = Report.load(os.path.join(ROOT, "tests", "data", "golden", "distributed_two_ranks.json"))
    rep = Report.from_dict(data.to_dict())
    brk = rep.graph_breaks.unique[0]
    assert brk.origin == "library" and brk.hints and brk.doc_url
    brk.site.code = "return impl(*args)  # the library's own line"
    sec = breaks.section(rep)
    (row,) = sec.tables[0].rows
    cells = dict(zip(sec.tables[0].headers, row))
    assert cells["function"] == brk.function and cells["explanation"] == brk.explanation
    assert cells["library code"] == "return impl(*args)  # the library's own line"
    assert cells["PyTorch's hints"].startswith(breaks.NOT_YOURS + brk.hints[0])
    assert cells["PyTorch's page"] == brk.doc_url and cells["PyTorch's page"].href == brk.doc_url
    term, md, page = _three(rep)
    _cells_in_all_three(sec, term, md, page)
    assert f'<a href="{brk.doc_url}">{brk.doc_url}</a>' in page
    assert f"| {brk.doc_url} |" in md and brk.doc_url not in term and "<a " not in md
    # a page that is not a web address is text, never a link
    brk.doc_url = "javascript:alert(1)"
    page = HtmlRenderer().render(rep)
    assert "javascript:alert(1)" in page and 'href="javascript' not in page


def test_a_pipe_in_code_does_not_split_a_markdown_cell():
    assert _cell("a | b", True) == "`a \\| b`" and _cell("a | b", False) == "a \\| b"


def test_memory_growth_and_drift_are_laid_out_by_their_phases():
    """Both phases fill part of another section (memory.attribution, numerics.drift); each lays
    out its own row and section (`Phase.reads`), and every format draws them."""
    from tcdoctor.report import phases

    data = Report.load(INJECT).to_dict()
    data["memory"]["attribution"] = {
        "grew": True,
        "growth_bytes": 4096,
        "threshold": "planted",
        "compile_working_set_bytes": 1 << 20,
        "graphs": [
            {
                "compile_id": "0/0",
                "function": "forward",
                "file": "/p/m.py",
                "line": 7,
                "bytes": 4096,
                "own_peak_bytes": 8192,
            }
        ],
        "largest": {
            "compile_id": "0/0",
            "function": "forward",
            "file": "/p/m.py",
            "line": 7,
            "bytes": 4096,
        },
        "method": "planted method",
    }
    data["numerics"]["drift"] = {
        "checked": True,
        "origin": {
            "name": "block.total",
            "class": "Total",
            "err_vs_fp64": 0.5,
            "eager_err_vs_fp64": 0.01,
        },
        "path": [
            {
                "name": "block.total",
                "class": "Total",
                "class_file": "/p/m.py",
                "class_line": 3,
                "ratio": 4.0,
                "err_vs_fp64": 0.5,
                "eager_err_vs_fp64": 0.01,
            }
        ],
        "modules_compared": 3,
        "method": "planted drift method",
    }
    rep = Report.from_dict(data)
    laid = {s.title: s for s in phases.layouts(rep)}
    assert {"Memory growth by compiled graph", "Where the numbers drift"} <= set(laid)
    rows = {r.label: r for r in phases.figure_rows(rep)}
    assert rows["memory growth"].value.startswith("4.0 KiB per call; largest: graph 0/0")
    assert rows["numerics drift"].value.startswith("origin block.total (Total)")
    term, md, page = _three(rep)
    for sec in (laid["Memory growth by compiled graph"], laid["Where the numbers drift"]):
        assert f"{sec.title}:" in term and f"### {_esc(sec.title)}" in md
        _cells_in_all_three(sec, term, md, page)
    assert "m.py:7" in term and "/p/m.py:7" not in term  # the terminal's short file names
    # a report made before either existed lays out neither
    bare = Report.load(os.path.join(ROOT, "tests", "data", "schema1_two_breaks.json"))
    assert not {"Memory growth by compiled graph", "Where the numbers drift"} & {
        s.title for s in phases.layouts(bare)
    }


# -- the structured compile log, the ranks' slowest phases, break-even, graphs, environment ------


def _distributed(tlparse: dict | None = None) -> Report:
    """The saved report with test_renderers.py's two-rank `distributed` and `torch_trace`."""
    data = with_ranks()
    data["torch_trace"]["tlparse"] = tlparse
    return Report.from_dict(data)


def test_the_trace_is_one_description_linked_in_the_html_only(tmp_path):
    """tlparse's report: one cell, a link relative to the HTML's folder (escaped, a quote and an
    ampersand in the path) in the HTML, the plain path in the Markdown and the terminal; the logs'
    folder, the log to attach and the other ranks' folder in all three."""
    from tcdoctor.render import trace

    index = tmp_path / "t&'\"x" / "tlparse" / "index.html"
    rep = _distributed({"ran": True, "exit_code": 0, "index": str(index)})
    sec = trace.section(rep.torch_trace, str(tmp_path))
    cells = {row[0]: row[1] for row in sec.tables[0].rows}
    assert cells["logs"] == "/runs/trace" and cells["the other ranks' logs"] == "/runs/trace/cold"
    assert (
        cells["attach to a PyTorch issue"].endswith("rank_0_a.log")
        and "render it with" not in cells
    )
    link = cells["tlparse report"]
    assert isinstance(link, Text) and link.href == os.path.join("t&'\"x", "tlparse", "index.html")
    term = TerminalRenderer().render(rep)
    md = MarkdownRenderer().render(rep)
    page = HtmlRenderer(base_dir=str(tmp_path)).render(rep)
    _cells_in_all_three(sec, term, md, page)
    assert f'<a href="{escape(link.href)}"><code>{escape(str(index))}</code></a>' in page
    assert f"| tlparse report | `{index}` |" in md and "](" not in md and "<a " not in md
    assert str(index) in term and "<a " not in term
    note = rep.torch_trace.note  # how the trace changes the figures: the files, not the terminal
    assert (
        note not in term
        and f"- {_esc(note)}" in md
        and f'<li class="how">{escape(note)}</li>' in page
    )


@pytest.mark.parametrize(
    "tlparse, why",
    [
        (None, "tlparse is not installed: pip install 'tcdoctor[tlparse]'"),
        ({"ran": False, "error": "exit <1>"}, "tlparse failed: exit <1>"),
    ],
    ids=["not-installed", "failed"],
)
def test_without_tlparse_s_report_every_format_says_the_command_and_why(tlparse, why):
    from tcdoctor.render import trace

    rep = _distributed(tlparse)
    sec = trace.section(rep.torch_trace)
    assert [n.text for n in sec.notes if not n.how] == [why]
    command = rep.torch_trace.command
    assert ["render it with", command] in [list(r) for r in sec.tables[0].rows]
    term, md, page = _three(rep)
    _cells_in_all_three(sec, term, md, page)
    assert f"  {why}" in term and f"- {_esc(why)}" in md and f"<li>{escape(why)}</li>" in page
    assert f"| render it with | `{command}` |" in md and f"<code>{escape(command)}</code>" in page


def test_the_ranks_slowest_phases_are_drawn_by_every_format():
    """The slowest rank per phase: the rank section's second table, its rows from
    `distributed.slowest` (rank, its time, the fastest rank's time, units.py's text), in all
    three formats; how each cross-rank figure was measured in the Markdown and HTML only."""
    from tcdoctor import units
    from tcdoctor.render import ranks

    rep = _distributed()
    sec = ranks.section(rep.distributed)
    slowest = sec.tables[1]
    assert [list(r) for r in slowest.rows] == [
        [p, str(s.rank), units.seconds(s.seconds), units.seconds(s.fastest_s)]
        for p, s in rep.distributed.slowest.items()
    ]
    assert len(slowest.rows) == 2
    term, md, page = _three(rep)
    _cells_in_all_three(sec, term, md, page)
    for row in slowest.rows:
        assert re.search(r"\n" + r" +".join(map(re.escape, row)) + r"\n", term), row
        assert "| " + " | ".join(_esc(c) for c in row) + " |" in md
        assert "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" in page
    how = [n.text for n in sec.notes if n.how]
    assert how == [f"{k}: {v}." for k, v in rep.distributed.method.items()]
    for line in how:
        assert line not in term and f"- {_esc(line)}" in md
        assert f'<li class="how">{escape(line)}</li>' in page


BREAK_EVEN = {
    "cold": {"calls": 1234, "wall_s": 2.5},
    "warm": {"calls": 56, "wall_s": 0.25},
    "expected_calls": 1000,
    "horizons": {"one epoch of 1,000 steps": 1000, "one epoch of 10,000 steps": 10000},
}


def test_break_even_is_one_description_in_the_html_and_the_markdown(report):
    """Cold and warm calls and wall time, each horizon and the expected calls with whether the
    cold cache pays back within them, from `verdict.break_even`; the HTML keeps its chart above;
    the terminal has the key figure only."""
    from tcdoctor.render import break_even

    report.verdict.break_even = dict(BREAK_EVEN)
    sec = break_even.section(report)
    repay, within = sec.tables
    assert [list(r) for r in repay.rows] == [
        ["cold cache", "1,234", "2.50 s"],
        ["warm cache", "56", "250.00 ms"],
    ]
    assert [list(r) for r in within.rows] == [
        ["one epoch of 1,000 steps", "1,000", "no"],
        ["one epoch of 10,000 steps", "10,000", "yes"],
        ["your expected calls", "1,000", "no"],
    ]
    term, md, page = _three(report)
    for table in sec.tables:
        for row in table.rows:
            assert "| " + " | ".join(_esc(c) for c in row) + " |" in md, row
            assert "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" in page, row
    assert f"\n### {sec.title}\n" in md and f"- {_esc(break_even.HOW)}" in md
    start = page.index(f"<summary>{sec.title}</summary>")
    assert page.index('aria-label="break-even"', start) < page.index("<table>", start)
    assert f'<li class="how">{escape(break_even.HOW)}</li>' in page
    assert "calls to repay compile" not in term and "pays back" not in term


def test_no_break_even_says_so_in_the_html_and_the_markdown(report):
    from tcdoctor.render import break_even

    assert not report.verdict.break_even.get("cold")  # the saved run: compiled is slower
    sec = break_even.section(report)
    assert not sec.tables and [n.text for n in sec.notes] == [break_even.NONE]
    term, md, page = _three(report)
    assert f"- {_esc(break_even.NONE)}" in md and f"<li>{escape(break_even.NONE)}</li>" in page
    assert break_even.NONE not in term and 'aria-label="break-even"' not in page


def test_the_graphs_and_the_environment_are_described_once(report):
    """The per-graph table (HTML and Markdown; the terminal has the count) and the environment
    and phases (the HTML only: the Markdown's footer and the terminal's first line name it)."""
    from tcdoctor.render import environment, graphs

    per_graph = graphs.section(report.graphs)
    assert len(per_graph.tables[0].rows) == len(report.graphs.per_graph) == 3
    env = environment.section(report)
    labels = [r.label for r in env.rows]
    assert "torch" in labels and "workload" not in labels
    assert [f"workload.{k}" for k in report.environment["workload"]] == labels[
        -len(report.environment["workload"]) :
    ]
    assert [r[0] for r in env.tables[0].rows] == list(report.phases)
    term, md, page = _three(report)
    for row in per_graph.tables[0].rows:
        assert "| " + " | ".join(_cell(c, i in (3, 4)) for i, c in enumerate(row)) + " |" in md
        assert str(escape(row[4])) in page and short(row[4]) not in term
    for row in env.rows:
        assert f"<tr><th>{escape(row.label)}</th><td>{escape(row.value)}</td>" in page
    for row in env.tables[0].rows:
        assert "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" in page
    assert env.title in page and env.title not in md and env.title not in term
