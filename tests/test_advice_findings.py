"""The advice reads the findings beside it (issue 42 item 5), driven with literal figures: a
localised drift names its module and what compiling around it measured (or why it was not tried)
and what the drift search found there; no advice to run a backend the analysis already ran, nor a
fix or remedy it already tried, which are cited with their figures instead. Then each advice rule
on its own threshold (guards, compile time, the recompile limit, numerics, CUDA graphs skipped).
No model runs."""

import dataclasses

import pytest

from tcdoctor.report.attribution import Bisection, ModuleDrift
from tcdoctor.report.model import Report
from tcdoctor.report.sections import FixRow, GraphBreak, NotTried, Recompile, RemedyRow, StrategyRow
from tcdoctor.report.sections.strategies import CudaGraphs
from tcdoctor.thresholds import RULES
from tcdoctor.verdict import decide
from tcdoctor.verdict.advice import (
    advise_compile_time,
    advise_graph_breaks,
    advise_guards,
    advise_mode,
    advise_numerics,
    advise_recompile_limit,
    advise_recompiles,
)
from tcdoctor.verdict.figures import Figures

RETRY = "retry with backend='aot_eager'"
GENERIC = (
    "Compiled outputs drift from eager beyond tolerance (max abs error 0.5). Check the failing "
    "outputs against the fp64 reference, look for reductions in low precision, and retry with "
    "backend='aot_eager' to tell Dynamo/AOT problems from Inductor ones."
)
ORIGIN = {
    "name": "mixer",
    "class": "Mixer",
    "class_file": "/u/lib/mixer.py",
    "class_line": 12,
    "err_vs_fp64": 1.0,
    "eager_err_vs_fp64": 0.05,
    "tol": 1e-2,
    "passed": False,
}
LINE = "Mixer.forward = torch.compiler.disable(Mixer.forward)  # mixer runs eagerly"
AROUND = FixRow(  # DisableModuleFix's row as experiments/fixes.run writes it
    name="mixer",
    kind="disable_module",
    fix=LINE,
    addresses=["numerics"],
    before={"speedup": 1.40, "speedup_ci": [1.35, 1.45], "numerics_passed": False},
    after={"speedup": 1.31, "speedup_ci": [1.25, 1.37], "numerics_passed": True},
    outcome="helps",
    why="the numerics check passes with it (compiled 1.31× vs eager)",
)
DRIFT = Figures(numerics_passed=False, numerics_max_abs_err=0.5, backend="inductor")
LOCALISED = dataclasses.replace(DRIFT, drift_origin=ModuleDrift.from_dict(ORIGIN))


def numerics_text(fig: Figures) -> str:
    (item,) = advise_numerics(fig, RULES)
    assert item.topic == "numerics"
    return item.text


def ablation(eager: bool | None, aot: bool | None) -> tuple[StrategyRow, ...]:
    return (
        StrategyRow(backend="eager", speedup=1.0, numerics_passed=eager),
        StrategyRow(backend="aot_eager", speedup=0.9, numerics_passed=aot),
        StrategyRow(backend="inductor", speedup=1.4, numerics_passed=False, source="main analysis"),
    )


# --- numerics -----------------------------------------------------------------------------------


def test_a_tried_compile_around_that_passes_names_the_module_and_its_figures():
    text = numerics_text(dataclasses.replace(LOCALISED, fix_rows=(AROUND,)))
    assert "Compile around `mixer` (`Mixer`, mixer.py:12), where the drift starts" in text
    assert f"one line in your own code before compiling, `{LINE}`" in text
    assert (
        "Tried in a fresh process: numerics pass with it, 1.31× (95% CI 1.25–1.37) vs eager "
        "(1.40× without it): significantly faster than eager: apply it." in text
    )
    assert "Not tried" not in text
    # what the drift search found at the origin: it computes in low precision
    assert "Its output is low precision (judged at the float16/bfloat16 tolerance, 0.01)" in text
    # the headline is kept; the generic where-to-look is replaced by the module
    assert text.startswith(
        "Compiled outputs drift from eager beyond tolerance (max abs error 0.5)."
    )
    assert "look for reductions in low precision" not in text


def test_a_tried_compile_around_that_is_slower_or_still_drifts_says_so():
    slow = dataclasses.replace(
        AROUND, after={"speedup": 0.6, "speedup_ci": [0.55, 0.65], "numerics_passed": True}
    )
    text = numerics_text(dataclasses.replace(LOCALISED, fix_rows=(slow,)))
    assert "numerics pass with it, 0.60× (95% CI 0.55–0.65) vs eager" in text
    assert text.count("not measurably faster than eager") == 1 and "apply it" not in text
    drifts = dataclasses.replace(
        AROUND, after={"speedup": 1.3, "numerics_passed": False, "max_abs_err": 0.25}
    )
    text = numerics_text(dataclasses.replace(LOCALISED, fix_rows=(drifts,)))
    assert "numerics still fail with it (max abs error 0.25)" in text
    assert "the drift does not come from this module alone" in text
    failed = dataclasses.replace(AROUND, after=None, outcome="fails", why="TypeError: no")
    text = numerics_text(dataclasses.replace(LOCALISED, fix_rows=(failed,)))
    assert "Tried in a fresh process: it fails (TypeError: no)." in text


def test_compile_around_not_tried_says_why():
    budget = "the fix budget (20 s, --fix-budget) was used up"
    spec = {
        "kind": "fix",
        "fix": {"kind": "disable_module", "name": "mixer", "class_name": "Mixer"},
    }
    text = numerics_text(
        dataclasses.replace(LOCALISED, fixes_not_tried=(NotTried(spec=spec, why=budget),))
    )
    assert "Compile around `mixer` (`Mixer`" in text and f"`{LINE}`" in text
    assert f"Not tried: {budget}." in text and "Tried in a fresh process" not in text
    text = numerics_text(dataclasses.replace(LOCALISED, fixes_enabled=False))
    assert "Not tried: the analysis ran with --no-fixes." in text
    # another fix's row is not this one's result
    other = FixRow(name="emulate_precision_casts", kind="inductor_config", fix="x", outcome="helps")
    text = numerics_text(dataclasses.replace(LOCALISED, fix_rows=(other,)))
    assert "Not tried in this analysis." in text and "Tried in a fresh process" not in text


def test_the_op_the_bisector_blames_and_a_recorded_dtype_are_named():
    bisector = Bisection(
        verdict="backend inductor, subsystem lowerings: sum_1 (application 1)",
        backend="inductor",
        subsystem="lowerings",
    )
    text = numerics_text(
        dataclasses.replace(
            LOCALISED,
            drift_origin=ModuleDrift.from_dict({**ORIGIN, "tol": 1e-4}),
            drift_bisector=bisector,
        )
    )
    assert (
        "PyTorch's CompilerBisector, on it alone, blames backend inductor, subsystem lowerings: "
        "sum_1 (application 1)." in text
    )
    assert "low precision" not in text  # judged at float32's tolerance: nothing to say of it
    text = numerics_text(
        dataclasses.replace(
            LOCALISED, drift_origin=ModuleDrift.from_dict({**ORIGIN, "dtype": "bfloat16"})
        )
    )
    assert "Its output is bfloat16." in text


def test_no_retry_with_aot_eager_when_the_ablation_ran_it():
    for fig in (LOCALISED, DRIFT):  # localised or not: the ablation's row is cited instead
        text = numerics_text(dataclasses.replace(fig, ablation_rows=ablation(True, True)))
        assert RETRY not in text
        assert (
            "The backend ablation already ran backend='aot_eager': it does not drift, so the loss "
            "is in Inductor." in text
        )
    text = numerics_text(dataclasses.replace(DRIFT, ablation_rows=ablation(True, False)))
    assert RETRY not in text
    assert (
        "backend='aot_eager': it drifts too (backend='eager' does not), so the loss is in "
        "AOTAutograd, not Inductor." in text
    )
    text = numerics_text(dataclasses.replace(DRIFT, ablation_rows=ablation(False, False)))
    assert RETRY not in text and "backend='eager': it drifts too, so the loss is in Dynamo" in text
    # where to look stays; only the retry is replaced
    assert "Check the failing outputs against the fp64 reference and look for reductions" in text


def test_no_retry_with_aot_eager_when_the_analysis_ran_it():
    for fig in (LOCALISED, DRIFT):
        text = numerics_text(dataclasses.replace(fig, backend="aot_eager"))
        assert RETRY not in text
        assert "This analysis compiled with backend='aot_eager' itself" in text
        assert "the drift is in Dynamo or AOTAutograd, not Inductor" in text


def test_the_ablation_read_from_a_report_reaches_the_verdicts_advice():
    data = {
        "options": {"backend": "inductor"},
        "numerics": {"passed": False, "max_abs_err": 0.5},
        "ablation": {
            "rows": [dataclasses.asdict(r) for r in ablation(True, True)],
            "layer": "outputs first drift with backend='inductor'",
        },
    }
    rep = Report.from_dict(data)
    fig = Figures.from_report(rep)
    assert [r.backend for r in fig.ablation_rows] == ["eager", "aot_eager", "inductor"]
    (text,) = [a.text for a in decide(rep).advice if a.topic == "numerics"]
    assert RETRY not in text and "it does not drift, so the loss is in Inductor" in text


def test_non_localised_drift_keeps_the_generic_advice():
    assert numerics_text(DRIFT) == GENERIC
    assert numerics_text(Figures(numerics_passed=False, numerics_max_abs_err=0.5)) == GENERIC
    # a drift search that named no module gives the same advice
    assert numerics_text(dataclasses.replace(DRIFT, drift_origin=ModuleDrift(name=""))) == GENERIC
    # a localised one without the ablation keeps the retry, after the module
    text = numerics_text(dataclasses.replace(LOCALISED, fixes_enabled=False))
    assert text.endswith(
        "Retry with backend='aot_eager' to tell Dynamo/AOT problems from Inductor ones "
        "(the analysis ran with --no-fixes: no backend ablation)."
    )


def test_figures_read_the_findings_from_a_report_once():
    data = {
        "options": {"backend": "inductor", "fixes": False},
        "numerics": {
            "passed": False,
            "drift": {"checked": True, "origin": ORIGIN, "bisector": {"not_run": "x"}},
        },
        "fixes": [AROUND.to_dict()],
        "fixes_not_tried": [{"spec": {"kind": "ablation", "backend": "eager"}, "why": "b"}],
        "strategies": {"regions": {"depth": 1, "regions": [{"name": "mixer", "module": "Mixer"}]}},
    }
    f = Figures.from_report(Report.from_dict(data))
    assert f.drift_origin.to_dict() == ORIGIN and f.drift_bisector == Bisection(not_run="x")
    assert f.fix_rows == (AROUND,) and f.fixes_not_tried[0].why == "b"
    assert (f.backend, f.fixes_enabled, f.ablation_rows, f.regions_measured) == (
        "inductor",
        False,
        (),
        True,
    )
    assert Figures.from_report(Report.from_dict({})).regions_measured is False


# --- the other topics: a tried fix or a measured remedy is cited, not suggested -------------------

STANCE = FixRow(
    name="skip_guard_eval_unsafe",
    kind="stance",
    fix='torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)  # after warm-up',
    before={"speedup": 0.8},
    after={"speedup": 0.81, "speedup_ci": [0.78, 0.84]},
    outcome="no effect",
)


def test_guard_advice_cites_the_tried_stance():
    base = Figures(guard_fraction=0.5, guard_s=4e-6, guard_count=45)
    (item,) = advise_guards(dataclasses.replace(base, fix_rows=(STANCE,)), RULES)
    assert (
        'skipping guard checks was tried in a fresh process: `torch.compiler.set_stance("default", '
        "skip_guard_eval_unsafe=True)  # after warm-up`: no effect (0.80× → 0.81× (95% CI 0.78–0.84))"
        in item.text
    )
    assert "skips guard checks once all shapes are warmed up" not in item.text
    (item,) = advise_guards(base, RULES)  # not tried: suggested
    assert "skips guard checks once all shapes are warmed up" in item.text
    # on CUDA with CUDA graphs already the analysed mode: never suggested again
    cuda = dataclasses.replace(base, device="cuda:0", mode="reduce-overhead")
    (item,) = advise_guards(cuda, RULES)
    assert 'use mode="reduce-overhead"' not in item.text
    assert "CUDA graphs are this analysis's mode already" in item.text


def test_compile_time_advice_cites_a_measured_remedy():
    regional = RemedyRow(
        name="regional",
        block="Block",
        blocks=12,
        first_call_s=1.2,
        median_s=0.5e-3,
        eager_median_s=1e-3,
        speedup=2.0,
        speedup_ci=[1.9, 2.1],
        line="for b in model.blocks: b.compile()",
    )
    slow = Figures(cold_s=61.0, warm_s=30.0, speedup=2.0, ci_low=1.9, ci_high=2.1)
    (item,) = advise_compile_time(dataclasses.replace(slow, remedies=(regional,)), RULES)
    assert "Consider compiling only" not in item.text
    assert (
        "The first call compiles for 61.00 s. Regional compilation (12 × Block), measured in a "
        "fresh process: first result after 1.20 s, repaid after 2,398 calls" in item.text
    )
    assert "`for b in model.blocks: b.compile()`" in item.text
    (item,) = advise_compile_time(slow, RULES)
    assert "Consider compiling only the hot submodules" in item.text
    cache = dataclasses.replace(regional, name="portable_cache", line="load_cache_artifacts(b)")
    cached = Figures(cold_s=3.0, warm_s=1.0, remedies=(cache,))
    (item,) = advise_compile_time(cached, RULES)
    assert "keep TORCHINDUCTOR_CACHE_DIR" in item.text
    assert (
        " Portable cache (load_cache_artifacts, then first call), measured in a fresh process: "
        "first result after 1.20 s" in item.text
    )


def test_graph_break_and_recompile_advice_point_at_measured_rows():
    brk = GraphBreak.from_dict(
        {
            "reason": "Unsupported call",
            "file": "/u/model.py",
            "line": 19,
            "origin": "library",
            "library": "somelib",
            "site": {"file": "/site-packages/somelib/x.py", "line": 3, "function": "f"},
        }
    )
    (item,) = advise_graph_breaks(Figures(break_findings=(brk,), regions_measured=True), RULES)
    assert "regional compilation: measured, see the regions recommendation" in item.text
    (item,) = advise_graph_breaks(Figures(break_findings=(brk,)), RULES)
    assert "(regional compilation, `--submodules`)" in item.text
    ev = Recompile(
        function="forward", variant="batch 8", reason="tensor 'x' size mismatch at index 0"
    )
    row = FixRow(
        name="marked", kind="dynamic", fix="torch._dynamo.mark_dynamic(x, dim)", outcome="helps"
    )
    (item,) = advise_recompiles(Figures(recompile_events=(ev,), fix_rows=(row,)), RULES)
    assert (
        "Measured (the dynamic-shape rows): `torch._dynamo.mark_dynamic(x, dim)`: helps"
        in item.text
    )
    (item,) = advise_recompiles(Figures(recompile_events=(ev,)), RULES)
    assert "Measured" not in item.text


# -- each advice rule on its own threshold, literal Figures ------------------------------------


@pytest.mark.parametrize("fraction, flagged", [(0.2, False), (0.201, True), (None, False)])
def test_guard_advice_above_a_fifth_of_a_compiled_call(fraction, flagged):
    figs = Figures(guard_fraction=fraction, guard_s=4e-6, guard_count=45)
    advice = advise_guards(figs, RULES)
    assert bool(advice) is flagged
    if flagged:
        (item,) = advice
        assert item.topic == "guard overhead" and item.evidence == "guards.overhead_fraction"
        assert item.text.startswith("Guard evaluation costs 4.0 µs per call, 20% of a compiled")
        assert "(45 guards)" in item.text and "skip_guard_eval_unsafe" in item.text


def test_guard_advice_on_cuda_points_at_cuda_graphs():
    (item,) = advise_guards(Figures(guard_fraction=0.5, device="cuda:0"), RULES)
    assert 'mode="reduce-overhead"' in item.text and "skip_guard_eval_unsafe" not in item.text


@pytest.mark.parametrize(
    "cold, warm, advice",
    [
        (3.0, 1.0, "keep TORCHINDUCTOR_CACHE_DIR"),  # cold/warm = 3: keep the cache
        (2.9, 1.0, None),
        (61.0, 30.0, "The first call compiles for 61.00 s"),  # ratio 2 but over 60 s
        (60.0, 30.0, None),
        (61.0, None, "The first call compiles for 61.00 s"),
        (None, None, None),
    ],
)
def test_compile_time_advice(cold, warm, advice):
    got = advise_compile_time(Figures(cold_s=cold, warm_s=warm), RULES)
    if advice is None:
        assert got == []
    else:
        (item,) = got
        assert item.topic == "compile time" and advice in item.text


@pytest.mark.parametrize("cold, warm", [(12.0, 1.5), (61.0, None)])
def test_compile_time_advice_names_the_isa_probe_compiling_less_cannot_cut(cold, warm):
    (item,) = advise_compile_time(Figures(cold_s=cold, warm_s=warm, isa_probe_s=8.9), RULES)
    assert "8.90 s of the cold first call is Inductor's one-off CPU ISA probe" in item.text
    assert "compiling less does not cut it" in item.text
    (plain,) = advise_compile_time(Figures(cold_s=cold, warm_s=warm), RULES)
    assert "ISA probe" not in plain.text


def test_recompile_limit_advice_only_when_hit():
    assert advise_recompile_limit(Figures(recompile_limit=8), RULES) == []
    (item,) = advise_recompile_limit(Figures(limit_hit=True, recompile_limit=8), RULES)
    assert item.text.startswith("The recompile limit (8) was hit") and "EAGERLY" in item.text


def test_numerics_advice_only_on_failure():
    assert advise_numerics(Figures(numerics_passed=None), RULES) == []
    assert advise_numerics(Figures(numerics_passed=True), RULES) == []
    (item,) = advise_numerics(Figures(numerics_passed=False, numerics_max_abs_err=0.5), RULES)
    assert "beyond tolerance (max abs error 0.5)" in item.text and "aot_eager" in item.text


def test_mode_advice_when_cuda_graphs_were_skipped():
    assert advise_mode(Figures(mode="reduce-overhead"), RULES) == []
    assert advise_mode(Figures(mode="max-autotune", cudagraph_skips=1), RULES) == []
    # a report from before PyTorch's reasons were read: the count, never a made-up reason
    figs = Figures(mode="reduce-overhead", cudagraph_skips=2, device="cpu")
    (item,) = advise_mode(figs, RULES)
    assert "(2 skip(s) recorded)" in item.text and "does not hold its reason" in item.text
    assert "nothing for it to capture" not in item.text and "default mode" not in item.text
    # with the reasons: PyTorch's words, for any mode that asks for CUDA graphs
    g = {"graphs": 2, "skipped": 1, "captured": 1, "reasons": [{"reason": "r", "count": 1}]}
    graphs = CudaGraphs.from_dict(g)
    (item,) = advise_mode(Figures(mode="max-autotune", cudagraphs=graphs), RULES)
    assert "1 of 2 compiled graph(s) (1 captured)" in item.text and "«r»" in item.text
    none_skipped = CudaGraphs.from_dict({**g, "skipped": 0})
    assert advise_mode(Figures(mode="max-autotune", cudagraphs=none_skipped), RULES) == []
