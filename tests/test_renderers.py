"""Renderers as one protocol (options to the constructor, `render(report)`), and the typed
`distributed` and `torch_trace` sections they read: loaded, written back unchanged, rendered in
every format. No model runs: a saved single-process report with the two sections added."""

import copy
import json
import os
import re

import pytest
from conftest import ROOT

from tcdoctor.render.base import Renderer
from tcdoctor.render.html import HtmlRenderer
from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report.model import Report
from tcdoctor.report.sections import Distributed, Divergence, RankRow, TorchTrace

SAVED = os.path.join(ROOT, "tests", "data", "schema1_two_breaks.json")


def _rank(rank: int, first_call_s: float, recompiles: int, reasons: list[str]) -> dict:
    """One rank's row as `report.distributed.rank_row` writes it (two-rank gloo run, trimmed)."""
    return {
        "rank": rank,
        "local_rank": rank,
        "host": "vm",
        "finished": True,
        "graphs": 1,
        "graph_breaks": 3,
        "recompiles": recompiles,
        "guards": 87,
        "first_call_s": first_call_s,
        "warm_first_call_s": None,
        "compile_s": first_call_s - 0.05,
        "step_median_s": 0.000263,
        "step_ci_s": [0.000242, 0.000467],
        "eager_step_median_s": 0.000109,
        "speedup": 0.41,
        "peak_bytes": None,
        "eager_peak_bytes": None,
        "graph_ops": [4],
        "break_reasons": [["Attempted to call function marked as skipped", "contextlib.py", 105]],
        "recompile_reasons": reasons,
        "inputs": {"inputs": "(Tensor[8,64] float32)", "variants": []},
        "phases": {"compile": first_call_s + 0.2, "runtime": 0.23 + rank / 4},
        "errors": [],
        "ddp": {"wrapper": "DistributedDataParallel", "subgraphs": 1, "bucket_cap_mb": 25.0},
    }


REASON = "tensor 'x' size mismatch at index 0: expected 8, actual 5"
DISTRIBUTED = {  # keys in the order report/distributed.py `section` and `finish` write them
    "world_size": 2,
    "backend": "gloo",
    "timeout_s": 1800.0,
    "ranks": [_rank(0, 1.179, 0, []), _rank(1, 0.906, 2, [REASON])],
    "timeout_source": "torch's default for gloo",
    "analysis_pg_timeout_s": 590.3,
    "launcher": "-m torch.distributed.run --nproc-per-node 2 --standalone -m tcdoctor.run.child SPEC",
    "node_rank": None,
    "nnodes": 1,
    "nproc_per_node": 2,
    "report_rank": 0,
    "not_measured": {"profile": "not run in distributed analyses"},
    "compile_skew_s": 0.273,
    "compile_time_skew_s": 0.273,
    "mixed_cache_skew_s": None,
    "compile_skew_fraction": 0.273 / 1800.0,
    "mixed_cache_skew_fraction": None,
    "divergences": [
        {
            "kind": "recompiles",
            "what": "recompile reasons",
            "values": {"0": [], "1": [REASON]},
            "text": f"recompile reasons differ between ranks (rank 0: none, rank 1: {REASON})",
            "risk": "one rank recompiles while the others wait at the next collective",
        }
    ],
    "slowest": {
        "compile": {"rank": 0, "seconds": 1.379, "fastest_s": 1.106},
        "runtime": {"rank": 1, "seconds": 0.48, "fastest_s": 0.23},
    },
    "ddp": {"wrapper": "DistributedDataParallel", "optimize_ddp": "True", "subgraphs": 1},
    "missing_ranks": [],
    "method": {"compile_skew_s": "max - min over ranks of the cold first compiled call"},
}
TORCH_TRACE = {  # as run/tlparse.py `attach` records it, tlparse not installed
    "dir": "/runs/trace",
    "logs": [
        "/runs/trace/cold/dedicated_log_torch_trace_rank_0_a.log",
        "/runs/trace/cold/dedicated_log_torch_trace_rank_1_b.log",
    ],
    "attach": "/runs/trace/cold/dedicated_log_torch_trace_rank_0_a.log",
    "command": "tlparse /runs/trace/cold -o /runs/trace/tlparse --overwrite --no-browser --all-ranks-html",
    "tlparse": None,
    "note": "compile figures of this run include the structured trace's own logging cost",
}


def with_ranks() -> dict:
    """The saved report's JSON with a two-rank run's sections added."""
    with open(SAVED, encoding="utf-8") as fh:
        data = json.load(fh)
    data["distributed"] = copy.deepcopy(DISTRIBUTED)
    data["torch_trace"] = copy.deepcopy(TORCH_TRACE)
    return data


@pytest.fixture
def saved() -> dict:
    return with_ranks()


# ------------------------------------------------------------------------------ typed sections


def test_sections_load_typed(saved):
    rep = Report.from_dict(saved)
    dist, tt = rep.distributed, rep.torch_trace
    assert isinstance(dist, Distributed) and isinstance(tt, TorchTrace)
    assert all(isinstance(r, RankRow) for r in dist.ranks) and [r.rank for r in dist.ranks] == [
        0,
        1,
    ]
    assert isinstance(dist.divergences[0], Divergence) and dist.divergences[0].kind == "recompiles"
    assert dist.ranks[1].recompile_reasons == [REASON] and dist.compile_skew_s == 0.273
    assert tt.attach.endswith("rank_0_a.log") and tt.index is None and tt.tlparse_error is None
    # every key is a field: nothing left over in `extra`
    assert not dist.extra and not tt.extra and not any(r.extra for r in dist.ranks)


def test_sections_round_trip_unchanged(saved):
    """Written back as read: same keys, same values, same order (so the same JSON text)."""
    out = Report.from_dict(saved).to_dict()
    for key in ("distributed", "torch_trace"):
        assert out[key] == saved[key]
        assert json.dumps(out[key]) == json.dumps(saved[key])
    assert Report.from_dict(out).to_dict() == out


def test_merged_and_unknown_keys_are_kept(saved):
    """`merge` adds nodes and merged_from; a newer tcdoctor's keys stay in `extra`."""
    saved["distributed"].update(nodes=["a", "b"], merged_from=2, newer_key={"x": 1})
    saved["distributed"]["ranks"][0]["newer_row_key"] = 3
    saved["torch_trace"]["tlparse"] = {"ran": False, "error": "boom"}
    rep = Report.from_dict(saved)
    assert rep.distributed.nodes == ["a", "b"] and rep.distributed.extra == {"newer_key": {"x": 1}}
    assert rep.torch_trace.tlparse_error == "boom"
    out = rep.to_dict()
    assert out["distributed"] == saved["distributed"]
    assert out["torch_trace"] == saved["torch_trace"]


def test_single_process_report_has_neither_section():
    with open(SAVED, encoding="utf-8") as fh:
        data = json.load(fh)
    rep = Report.from_dict(data)
    assert rep.distributed is None and rep.torch_trace is None
    out = rep.to_dict()
    assert "distributed" not in out and "torch_trace" not in out


# ----------------------------------------------------------------------------------- renderers


RENDERERS = [TerminalRenderer(), MarkdownRenderer(), HtmlRenderer()]


@pytest.mark.parametrize("renderer", RENDERERS, ids=lambda r: r.name)
def test_every_format_is_a_renderer(renderer, saved):
    assert isinstance(renderer, Renderer)
    text = renderer.render(Report.from_dict(saved))
    assert isinstance(text, str) and text
    with pytest.raises(AttributeError):  # options are fixed at construction
        renderer.name_of_an_option = 1


def test_renderer_needs_render():
    class Incomplete(Renderer):
        name = "incomplete"

    with pytest.raises(TypeError):
        Incomplete()


def test_options_go_to_the_constructor(saved):
    rep = Report.from_dict(saved)
    assert rep.graph_breaks.unique and len(rep.graph_breaks.unique) == 2
    assert "… and 1 more" in TerminalRenderer(limit=1).render(rep)
    assert "… and" not in TerminalRenderer().render(rep)
    assert "<summary>1 more</summary>" in MarkdownRenderer(top=1).render(rep)
    page, frag = HtmlRenderer().render(rep), HtmlRenderer(fragment=True).render(rep)
    assert page.lstrip().startswith("<!DOCTYPE html>") and "<html" not in frag


def test_terminal_rank_table(saved):
    text = TerminalRenderer().render(Report.from_dict(saved))
    assert "\nRanks:\n" in text
    assert (
        "  world size 2, backend gloo, process-group timeout 1800.00 s (torch's default for gloo)\n"
        in text
    )
    assert "  compile skew, cold/cold: 273.00 ms (0.0% of the 1800.00 s timeout)\n" in text
    assert "  compile skew, cold/warm (mixed cache): not measured\n" in text
    assert (
        f"  DIVERGENCE: recompile reasons differ between ranks (rank 0: none, rank 1: {REASON})"
        in text
    )
    assert "slowest: compile" in text and "slowest: runtime" in text
    assert "263.0 µs (242.0 µs–467.0 µs)" in text
    assert "\n\nStructured compile log (TORCH_TRACE):\n" in text
    assert re.search(r"\nlogs +/runs/trace\n", text)
    assert re.search(r"\nrender it with +tlparse /runs/trace/cold -o", text)


def test_markdown_rank_table(saved):
    md = MarkdownRenderer().render(Report.from_dict(saved))
    assert "\n### Ranks (2 of 2)\n\n| rank | host | graphs |" in md
    assert "| first call (warm) | step median (95% CI) | peak mem | |\n|---|---|---|" in md
    assert "- compile skew, cold/cold: 273.00 ms (0.0% of the 1800.00 s timeout)" in md
    assert "\n### Structured compile log (TORCH\\_TRACE)\n" in md
    assert (
        "\n| attach to a PyTorch issue | `/runs/trace/cold/dedicated_log_torch_trace_rank_0_a.log` |"
        "\n| the other ranks' logs | `/runs/trace/cold` |\n| render it with | `tlparse /runs/trace/cold"
        in md
    )


def test_html_rank_table_and_tlparse_link(saved, tmp_path):
    saved["distributed"]["ranks"][0]["host"] = "<b>node|0</b>"
    index = tmp_path / "trace" / "tlparse" / "index.html"
    saved["torch_trace"]["tlparse"] = {"ran": True, "exit_code": 0, "index": str(index)}
    page = HtmlRenderer(base_dir=str(tmp_path)).render(Report.from_dict(saved))
    assert "<details open><summary>Ranks (2 of 2)</summary>" in page
    assert "<td>&lt;b&gt;node|0&lt;/b&gt;</td>" in page and "<b>node" not in page
    assert "<tr><td>runtime</td><td>1</td><td>480.00 ms</td><td>230.00 ms</td></tr>" in page
    assert (
        f'<tr><td>tlparse report</td><td><a href="trace/tlparse/index.html"><code>{index}</code></a>'
        "</td></tr>" in page
    )


def test_html_says_why_tlparse_did_not_render(saved):
    saved["torch_trace"]["tlparse"] = {"ran": False, "error": "exit <1>"}
    page = HtmlRenderer().render(Report.from_dict(saved))
    assert "<li>tlparse failed: exit &lt;1&gt;</li>" in page


@pytest.mark.parametrize("renderer", RENDERERS, ids=lambda r: r.name)
def test_no_rank_table_without_the_sections(renderer):
    rep = Report.load(SAVED)
    text = renderer.render(rep)
    assert "Ranks" not in text and "Structured compile log" not in text


SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.mark.parametrize(
    "tlparse", [None, {"ran": False, "error": SCRIPT}], ids=["command", "failed"]
)
def test_html_rank_table_and_trace_block_escape_every_string(saved, tlparse):
    """The rank table and the tlparse block go through the template's autoescape: a `<script>` in
    any string of theirs (a host name, a divergence, a phase, a method, a path) stays text."""
    dist, tt = saved["distributed"], saved["torch_trace"]
    dist["ranks"][0]["host"] = SCRIPT
    dist["divergences"][0]["text"] = SCRIPT
    dist["slowest"][SCRIPT] = {"rank": 0, "seconds": 1.0, "fastest_s": 0.5}
    dist["method"] = {SCRIPT: SCRIPT}
    tt.update(command=SCRIPT, attach=SCRIPT, note=SCRIPT, tlparse=tlparse)
    page = HtmlRenderer().render(Report.from_dict(saved))
    assert "<script>alert" not in page
    # host, divergence, phase, method key and value, command, attach, note, tlparse's error
    assert page.count(ESCAPED) == 8 + (tlparse is not None)
    assert f"<td>{ESCAPED}</td>" in page and f'<li class="how">{ESCAPED}: {ESCAPED}.</li>' in page


def test_html_trace_link_is_escaped(saved, tmp_path):
    index = tmp_path / 'a"><script>alert(1)</script>' / "index.html"
    saved["torch_trace"]["tlparse"] = {"ran": True, "exit_code": 0, "index": str(index)}
    page = HtmlRenderer(base_dir=str(tmp_path)).render(Report.from_dict(saved))
    assert "<script>alert" not in page
    assert f'<a href="a&#34;&gt;{ESCAPED}/index.html"><code>' in page


COMPILE_GRAPHS = os.path.join(ROOT, "tests", "data", "compile_graphs_two_breaks.json")


def _with_remedy() -> Report:
    """The saved aot_eager report with compile.graphs, and one remedy row as a Inductor run adds."""
    from tcdoctor.report.sections import RemedyRow

    rep = Report.load(COMPILE_GRAPHS)
    rep.compile.remedies.rows = [
        RemedyRow(
            name="portable_cache",
            first_call_s=0.25,
            load_s=0.05,
            median_s=4e-4,
            eager_median_s=3e-4,
            speedup=0.75,
            speedup_ci=[0.7, 0.8],
            line="torch.compiler.load_cache_artifacts(blob)",
        )
    ]
    return rep


def test_terminal_shows_figures_and_leaves_the_method_to_the_files():
    from markupsafe import escape

    from tcdoctor.render import compile_table, remedy_table

    rep = _with_remedy()
    method = rep.compile.graphs.method
    assert method.startswith("one row per compile id of the cold first call's CompilationMetrics")
    text = TerminalRenderer().render(rep)
    for how in (method, compile_table.TIME_PER_CALL, remedy_table.HOW):
        assert how not in text
    assert "how:" not in text and "time/call:" not in text
    # the figures stay: the frames, their check, the remedy row
    assert "0/0           forward" in text and "447.56 ms" in text
    assert (
        "  frames sum to 645.01 ms of the first call's 659.27 ms compile time "
        "(first call − eager call; coverage 98%)\n" in text
    )
    assert "portable cache (load_cache_artifacts, then first call)  300.00 ms" in text
    # the method stays in the Markdown details and the HTML
    md, page = MarkdownRenderer().render(rep), HtmlRenderer().render(rep)
    assert f"- how: {method}" in md.replace("\\", "")
    assert f"- {compile_table.TIME_PER_CALL}" in md and f"- {remedy_table.HOW}" in md
    assert "How: one row per compile id" in page and str(escape(remedy_table.HOW)) in page


def test_a_chart_label_is_escaped_by_the_template():
    """The SVG charts' markup is templates/charts.html.j2's: a remedy named `<script>` (its bar's
    label in the cold-start chart) is text."""
    rep = _with_remedy()
    rep.compile.remedies.rows[0].name = SCRIPT
    page = HtmlRenderer().render(rep)
    assert "<script>alert" not in page
    assert f'class="lbl">{ESCAPED}</text>' in page


def test_render_builds_no_markup_from_strings():
    """Every escape is the template's: no html.escape in render/, and the only Markup is each page's
    own constant script (the report's, and a page's such as the sweep overview: its hash is in
    the Content-Security-Policy)."""
    import pathlib
    import re

    src = {p.name: p.read_text() for p in pathlib.Path(ROOT, "tcdoctor", "render").glob("*.py")}
    assert "html.py" in src and "charts.py" in src
    assert not [
        n for n, text in src.items() if re.search(r"\bescape\b", text.replace("autoescape", ""))
    ]
    assert sorted((n, m) for n, t in src.items() for m in re.findall(r"Markup\(\w*\)", t)) == [
        ("html.py", "Markup(PAGE_SCRIPT)"),
        ("html.py", "Markup(SCRIPT)"),
    ]
    # each script is a module constant, never built from data
    for name in ("SCRIPT", "SORT_SCRIPT"):
        assert re.search(rf'^{name} = r?"""', src["html.py"], re.M), name
    assert re.search(r"^PAGE_SCRIPT = SCRIPT \+ SORT_SCRIPT\b", src["html.py"], re.M)


def test_one_escaper_per_format():
    """The Markdown's one escaper is markdown.py's `_esc`, the HTML's Jinja's autoescape in
    html.py's one environment: no other module of render/ (nor report/diff.py, whose drawing is
    render/'s) escapes, imports an escaper or makes a Jinja environment."""
    import pathlib
    import re

    render = pathlib.Path(ROOT, "tcdoctor", "render")
    src = {p.name: p.read_text() for p in render.glob("*.py")}
    src["report/diff.py"] = pathlib.Path(ROOT, "tcdoctor", "report", "diff.py").read_text()
    assert [n for n, t in src.items() if re.search(r"\b_esc\b", t)] == ["markdown.py"]
    assert [n for n, t in src.items() if "jinja2.Environment(" in t] == ["html.py"]
    assert [n for n, t in src.items() if "_env(" in t] == ["html.py"]
    for name, text in src.items():  # an escaper of its own: a chain of replace() on markup
        if name not in ("markdown.py", "github.py"):  # github.py: the workflow commands' own
            assert not re.search(r"\.replace\(\"[|<>`]", text), name
