"""Compile-time remedies (tcdoctor/experiments/compile_remedies.py): regional compilation and a
portable cache, each tried in a fresh process with an empty inductor cache.

Fast tests drive the block detection, the verdict, `check` and the renderers with literal figures;
one integration run (module-scoped, shared by several assertions) analyses a Hugging Face Llama
built from a config with eight identical layers, with Inductor, and asserts orderings with
margins, never exact times.
"""

import dataclasses
import json
import os

import pytest
import torch
from consistency import contradictions
from torch import nn

from tcdoctor.checks.table import run_checks
from tcdoctor.experiments import compile_remedies
from tcdoctor.experiments.specs import AblationSpec, PortableCacheSpec, RegionalCompileSpec
from tcdoctor.options import Options
from tcdoctor.render.html import HtmlRenderer
from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report.events import Event
from tcdoctor.report.model import Report
from tcdoctor.thresholds import RULES
from tcdoctor.verdict import judge
from tcdoctor.verdict.decision import decision
from tcdoctor.verdict.figures import Figures

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMA = os.path.join(HERE, "targets", "real", "llama_layers.py")


# -- which block repeats ------------------------------------------------------------------


class Block(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.a, self.b = nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class Stack(nn.Module):
    def __init__(self, n=4, d=16, vocab=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.body = nn.Module()
        self.body.layers = nn.ModuleList(Block(d) for _ in range(n))
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        h = self.embed(x)
        for layer in self.body.layers:
            h = layer(h)
        return self.head(h)


def test_the_outermost_repeated_block_with_most_parameters_is_found():
    found = compile_remedies.repeated_block(Stack())
    # Linear has more instances and more parameters, but every one of those inside a Block
    assert found["block"] == "Block" and found["container"] == "body.layers"
    assert found["names"] == [f"body.layers.{i}" for i in range(4)]
    assert 0.5 <= found["share"] < 1.0


def test_no_repeated_block_says_why():
    assert "why" in compile_remedies.repeated_block(nn.Linear(4, 4))
    big_head = Stack(n=2, d=4, vocab=1000)  # the embedding and head hold most parameters
    assert "no module class" in compile_remedies.repeated_block(big_head)["why"]
    assert "not an nn.Module" in compile_remedies.repeated_block(lambda x: x)["why"]


def test_the_line_names_the_real_attribute_path():
    spec = RegionalCompileSpec(
        "Block", names=["body.layers.0", "body.layers.1"], container="body.layers"
    )
    assert spec.line == "for layer in model.body.layers: layer.compile()"
    loose = dataclasses.replace(spec, container=None, compile_args="mode='max-autotune'")
    assert loose.line.startswith("for name in ['body.layers.0', 'body.layers.1']: ")
    assert loose.line.endswith("model.get_submodule(name).compile(mode='max-autotune')")


def test_regional_compilation_compiles_one_block_code_for_every_instance():
    """What the remedy relies on: the instances share one compiled graph (eager backend: cheap)."""
    from tcdoctor.probes import dynamo_state

    model = Stack().eval()
    x = torch.randint(0, 8, (2, 5))
    expected = model(x)
    dynamo_state.fresh()
    for layer in model.body.layers:
        layer.compile(backend="eager")
    with torch.no_grad():
        assert torch.allclose(model(x), expected)
    assert dynamo_state.counter("stats", "unique_graphs") == 1
    dynamo_state.fresh()


@pytest.mark.parametrize(
    "opts, first, planned",
    [
        (Options(), 5.0, False),  # automatic: a short cold start is not worth two children
        (Options(), 90.0, True),
        (Options(compile_remedies=True), 5.0, True),
        (Options(compile_remedies=False), 90.0, False),
        (Options(backend="aot_eager", compile_remedies=True), 90.0, False),
    ],
)
def test_when_remedies_are_tried(opts, first, planned):
    assert (compile_remedies.wanted(opts, first) is None) is planned


def test_plan_names_what_it_did_not_try():
    w = dataclasses.make_dataclass("W", ["model", "kind", "compile_kwargs"])(Stack(), "infer", {})
    results = {
        "compile": {"first_call_s": 1.0},
        "cache_artifacts": {"path": "/x/a.bin", "bytes": 3},
    }
    specs, skipped = compile_remedies.plan(w, Options(compile_remedies=True), results)
    assert [type(s) for s in specs] == [RegionalCompileSpec, PortableCacheSpec]
    assert skipped == [] and all(s.fresh_cache and s.uses_fix_budget for s in specs)
    train = dataclasses.replace(w, kind="train")
    specs, skipped = compile_remedies.plan(train, Options(compile_remedies=True), {})
    assert specs == [] and {s["remedy"] for s in skipped} == {
        "regional compilation",
        "portable cache",
    }


# -- the verdict, check and renderers, from literal figures -----------------------------------


def remedy_row(name, first, speedup, lo, hi, load=None, **kw):
    return {
        "name": name,
        "first_call_s": first,
        "load_s": load,
        "eager_median_s": 1e-3,
        "median_s": 1e-3 / speedup,
        "speedup": speedup,
        "speedup_ci": [lo, hi],
        "numerics_passed": True,
        "line": "for layer in model.layers: layer.compile()" if name == "regional" else "load",
        "block": "Block" if name == "regional" else None,
        "blocks": 4 if name == "regional" else None,
        **kw,
    }


def report_with_remedies(cold=200.0, warm=100.0, rows=None) -> Report:
    rows = (
        rows
        if rows is not None
        else [
            remedy_row("regional", 2.0, 1.30, 1.25, 1.35),
            remedy_row("portable_cache", 150.0, 1.52, 1.49, 1.56, load=0.5),
        ]
    )
    rep = Report.from_dict(
        {
            "target": "m.py:build",
            "environment": {"device": "cpu", "torch": "2.13.0"},
            "compile": {
                "first_call_s": cold,
                "warm_s": warm,
                "remedies": {
                    "rows": rows,
                    "artifacts": {"bytes": 1234, "save_s": 0.001},
                    "not_tried": [],
                    "settings": [{"setting": "X", "why": "not tried: <b>because</b>"}],
                },
            },
            "runtime": {
                "eager": {"median_s": 1e-3},
                "compiled": {"median_s": 1e-3 / 1.52},
                "speedup": 1.52,
                "speedup_ci": [1.49, 1.56],
            },
            "numerics": {"passed": True},
        }
    )
    judge(rep)
    return rep


def test_a_remedy_that_repays_within_the_horizon_turns_never_repaid_into_compile():
    rep = report_with_remedies()
    fig = Figures.from_report(rep)
    assert fig.never_repaid(RULES.expected_calls)
    d, reasons = decision(fig, RULES)
    assert d == "compile" and rep.verdict.decision == "compile"
    assert "with regional compilation (4 × Block) it is repaid after" in reasons[0]
    assert "slower per call" in reasons[0]  # it costs speed, and says how much
    assert "`for layer in model.layers: layer.compile()`" in reasons[0]
    assert rep.verdict.break_even["remedy"]["name"] == "regional"
    assert contradictions(rep) == []
    without = dataclasses.replace(fig, remedies=())
    assert decision(without, RULES)[0] == "dont-compile"


def test_a_compile_verdict_names_the_remedys_break_even_and_speed():
    rep = report_with_remedies(cold=20.0, warm=5.0)
    text = " ".join(rep.verdict.reasons)
    assert "Pays back after" in text and "calls cold; after" in text
    same = report_with_remedies(cold=20.0, rows=[remedy_row("regional", 2.0, 1.50, 1.45, 1.55)])
    assert "same speed within the CI" in " ".join(same.verdict.reasons)


def test_a_remedy_that_is_not_faster_is_not_used():
    rep = report_with_remedies(rows=[remedy_row("regional", 2.0, 0.9, 0.85, 0.95)])
    assert rep.verdict.decision == "dont-compile"
    assert rep.verdict.break_even["remedy"] is None
    assert contradictions(rep) == []


def test_check_judges_the_best_measured_remedy_and_names_it():
    rep = report_with_remedies()
    (plain,) = run_checks(rep, max_compile_seconds=10.0)
    assert not plain.passed and plain.reason.startswith("200")
    (best,) = run_checks(rep, max_compile_seconds=10.0, compile_remedies=True)
    assert best.passed and "with regional compilation (4 × Block)" in best.reason
    (none,) = run_checks(
        report_with_remedies(rows=[]), max_compile_seconds=10.0, compile_remedies=True
    )
    assert not none.passed and "the whole model, cold" in none.reason
    assert "no remedy measured" in none.reason


def test_every_format_shows_the_rows_and_escapes_them():
    rep = report_with_remedies()
    term = TerminalRenderer().render(rep)
    assert "Cutting the cold start:" in term and "portable cache" in term
    md = MarkdownRenderer().render(rep)
    assert "### Cutting the cold start" in md and "| whole model, warm local cache |" in md
    html = HtmlRenderer().render(rep)
    assert "<h2>Cutting the cold start</h2>" in html and 'aria-label="first call by way' in html
    assert "&lt;b&gt;because&lt;/b&gt;" in html and "<b>because</b>" not in html


def test_a_report_without_remedies_renders_no_section():
    rep = Report.from_dict({"target": "m.py:build"})
    for out in (TerminalRenderer().render(rep), MarkdownRenderer().render(rep)):
        assert "Cutting the cold start" not in out
    assert "Cutting the cold start" not in HtmlRenderer().render(rep)


# -- one real run: a transformers model with eight identical layers -----------------------------


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """One analysis with Inductor and --compile-remedies, shared by the assertions below."""
    from conftest import ONE_PROCESS, run_cli

    pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("llama")
    code, stdout, stderr = run_cli(
        out,
        "analyze",
        f"{LLAMA}:build",
        "--threads",
        "1",
        "--budget",
        "0.3",
        *ONE_PROCESS,  # the warm row is the main analysis's, not what this file tests
        "--compile-remedies",
        "--fix-budget",
        "300",
        "--no-fixes",
        "--json",
        "r.json",
        "--html",
        "r.html",
        "--md",
        "r.md",
        timeout=420,
    )
    assert code == 0, stderr[-3000:]
    return out, Report.load(str(out / "r.json")), stdout, stderr


@pytest.mark.timing
def test_regional_compilation_cuts_the_cold_first_call(llama):
    _, rep, _, _ = llama
    rows = {r.name: r for r in rep.compile.remedies.rows}
    regional = rows["regional"]
    assert regional.block == "LlamaDecoderLayer" and regional.blocks == 8
    assert regional.line == "for layer in model.model.layers: layer.compile()"
    assert regional.first_call_s < 0.8 * rep.compile.cold_s  # one block's code, not eight
    assert regional.speedup is not None and len(regional.speedup_ci) == 2
    assert regional.numerics_passed is True


@pytest.mark.timing
def test_a_portable_cache_cuts_the_cold_first_call(llama):
    _, rep, _, _ = llama
    portable = {r.name: r for r in rep.compile.remedies.rows}["portable_cache"]
    assert portable.artifact_bytes == rep.compile.remedies.artifacts["bytes"] > 0
    assert portable.cache["fxgraph_cache_hit"] >= 1  # the loaded graph, not a new compile
    assert portable.extra["compile_phases"]["inductor_lowering_s"] == 0
    assert 0 < portable.load_s < portable.startup_s < rep.compile.cold_s
    assert portable.speedup is not None and len(portable.speedup_ci) == 2
    assert "C++" in portable.note  # on CPU the kernels are compiled again: said, not hidden


@pytest.mark.timing
def test_the_run_reports_remedies_everywhere_and_consistently(llama):
    out, rep, stdout, stderr = llama
    assert contradictions(rep) == []
    assert "strategy 1/2: regional compilation (8 × LlamaDecoderLayer)" in stderr
    assert "Cutting the cold start:" in stdout
    assert "Cutting the cold start" in (out / "r.md").read_text()
    html = (out / "r.html").read_text()
    assert (
        "<h2>Cutting the cold start</h2>" in html
        and "http" not in html.split("<h2>Cutting")[1][:2000]
    )
    saved = json.loads((out / "r.json").read_text())
    assert {r["name"] for r in saved["compile"]["remedies"]["rows"]} == {
        "regional",
        "portable_cache",
    }
    assert all(r["method"] for r in saved["compile"]["remedies"]["rows"])


@pytest.mark.timing
def test_check_with_compile_remedies_names_the_remedy_it_used(llama):
    from conftest import run_cli

    out, rep, _, _ = llama
    best = min(r.startup_s for r in rep.compile.remedies.measured)
    limit = f"{(best + rep.compile.cold_s) / 2:.3f}"  # between the best remedy and the cold start
    code, stdout, _ = run_cli(out, "check", "--report", "r.json", "--max-compile-seconds", limit)
    assert code == 1 and "FAIL  cold compile seconds" in stdout
    code, stdout, _ = run_cli(
        out, "check", "--report", "r.json", "--max-compile-seconds", limit, "--compile-remedies"
    )
    assert code == 0 and "PASS  first call, best measured remedy" in stdout
    assert " with regional compilation" in stdout or " with portable cache" in stdout


def test_assembly_puts_remedies_in_compile_and_keeps_them_out_of_the_fixes():
    from tcdoctor.run.assemble import assemble

    regional = RegionalCompileSpec("Block", names=["a.0", "a.1"], container="a")
    portable = PortableCacheSpec("/w/cache-artifacts.bin", artifact_bytes=10)
    row = dict(remedy_row("regional", 2.0, 1.3, 1.25, 1.35), spec=regional.to_dict())
    ablation = {"spec": AblationSpec(backend="aot_eager").to_dict(), "why": "no time"}
    events = [
        Event(event="done", phase="compile", data={"first_call_s": 20.0, "guards": {}}),
        Event(event="done", phase="cache_artifacts", data={"path": "/w/c.bin", "bytes": 10}),
        Event(
            event="done",
            phase="plan",
            data={
                "strategies": [regional.to_dict(), portable.to_dict()],
                "remedies_not_tried": [],
            },
        ),
        Event(event="done", phase=regional.phase, data=row),
        Event(
            event="done",
            phase="fixes_not_tried",
            data={"not_tried": [{"spec": portable.to_dict(), "why": "budget used up"}, ablation]},
        ),
    ]
    rep = assemble("m.py:build", Options().to_dict(), events, [])
    rem = rep.compile.remedies
    assert [r.name for r in rem.rows] == ["regional"] and rem.artifacts["bytes"] == 10
    assert rem.not_tried == [{"remedy": portable.label, "why": "budget used up"}]
    # a fix left untried stays in fixes_not_tried, a typed record that writes the planner's dict
    (nt,) = rep.fixes_not_tried
    assert (nt.name, nt.why) == ("aot_eager", "no time") and rep.to_dict()["fixes_not_tried"] == [
        ablation
    ]
    assert rem.settings
    assert Report.from_dict(json.loads(rep.to_json())).to_dict() == rep.to_dict()


def test_a_block_of_pytorchs_own_is_not_tried_because_dynamo_would_skip_it():
    """Compiling an nn.TransformerEncoderLayer alone compiles no frame (seen on tests/targets/real/
    transformer_encoder.py: first call 4 ms, frames_compiled 0): said at planning time."""
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True)
    model = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
    why = compile_remedies.repeated_block(model)["why"]
    assert "PyTorch's own TransformerEncoderLayer" in why and "compiles nothing" in why


def test_a_row_that_compiled_nothing_is_not_a_remedy():
    empty = remedy_row("regional", 0.004, 1.9, 1.85, 1.95, frames_compiled=0)
    rep = report_with_remedies(rows=[empty])
    assert rep.compile.remedies.measured == [] and "remedy" not in (rep.verdict.break_even or {})
    (check,) = run_checks(rep, max_compile_seconds=1.0, compile_remedies=True)
    assert not check.passed and "the whole model, cold" in check.reason


def test_blocks_spread_over_several_lists_are_named_one_by_one():
    """A UNet holds its blocks in several ModuleLists: the lists are containers, never the block."""
    model = nn.Module()
    model.down, model.up = nn.ModuleList([Block(), Block()]), nn.ModuleList([Block(), Block()])
    found = compile_remedies.repeated_block(model)
    assert found["block"] == "Block" and found["container"] is None
    assert found["names"] == ["down.0", "down.1", "up.0", "up.1"]


def test_the_progress_line_of_the_portable_cache_shows_its_load():
    from tcdoctor.run.progress import headline

    d = {"speedup": 2.0, "speedup_ci": [1.9, 2.1], "first_call_s": 3.0, "load_s": 0.2}
    line = headline(PortableCacheSpec("/w/c.bin").phase, d)
    assert line.startswith("2.00×") and ", load 200" in line and " + first call 3" in line
    assert "load" not in headline(PortableCacheSpec("/w/c.bin").phase, dict(d, load_s=None))


def test_a_run_that_tried_no_remedy_says_why_in_one_line():
    rep = report_with_remedies(rows=[])
    rep.compile.remedies.not_tried = [{"remedy": "portable cache", "why": "cold under 60 s <x>"}]
    for out in (TerminalRenderer().render(rep), MarkdownRenderer().render(rep)):
        assert "Cold-start remedies not tried: cold under 60 s" in out
        assert "Cutting the cold start" not in out
    html = HtmlRenderer().render(rep)
    assert "Cold-start remedies not tried: cold under 60 s &lt;x&gt;." in html
    rep.options = {"compile_remedies": True}  # asked for: the table, with the why under it
    assert "Cutting the cold start:" in TerminalRenderer().render(rep)


def test_a_portable_cache_is_never_said_to_cost_speed():
    """Its graphs are the cold compile's own, loaded: a speed difference is between processes."""
    rows = [remedy_row("portable_cache", 5.0, 1.20, 1.15, 1.25, load=0.5)]
    text = " ".join(report_with_remedies(cold=20.0, rows=rows).verdict.reasons)
    assert "the same compiled code (1.20×" in text and "slower" not in text
