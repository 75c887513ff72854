"""Advice that was tried: break costs ranked, fixes applied in fresh processes, the layer a loss comes from."""

from __future__ import annotations

import json

import pytest
from conftest import CHEAP, ONE_PROCESS, sample

import tcdoctor
from tcdoctor.experiments import fixes
from tcdoctor.experiments.specs import FixSpec, StanceFix
from tcdoctor.outcomes import FixOutcome
from tcdoctor.probes import break_cost
from tcdoctor.report import break_gain
from tcdoctor.report.model import Report
from tcdoctor.report.phases.results import MainResults
from tcdoctor.report.processes import claims
from tcdoctor.report.sections import FixRow, FixSide, StrategyRow
from tcdoctor.verdict import tried


def _analyze(cli, tmp_path, target, *extra):
    rc, out, err = cli("analyze", target, *CHEAP, *extra, "--json", "r.json")
    assert rc == 0, out + err
    return json.loads((tmp_path / "r.json").read_text())


def test_a_config_switch_named_by_the_hint_removes_the_break_it_addresses(cli, tmp_path):
    rep = _analyze(cli, tmp_path, sample("item_scalar.py") + ":build")
    (b,) = rep["graph_breaks"]["unique"]
    (fix,) = [f for f in rep["fixes"] if f["name"] == "capture_scalar_outputs"]
    assert (
        fix["addresses"] == [b["id"]]
        and fix["fix"] == "torch._dynamo.config.capture_scalar_outputs = True"
    )
    assert (
        fix["before"]["graph_breaks"] == 1
        and fix["cheap"]["graph_breaks"] == 0
        and fix["after"]["graph_breaks"] == 0
    )
    assert fix["after"]["speedup_ci"] and fix["after"]["numerics_passed"] is True
    assert any(
        a["topic"] == "tried fix" and "capture_scalar_outputs" in a["text"]
        for a in rep["verdict"]["advice"]
    )


def test_a_fix_that_does_not_remove_the_break_is_reported_as_no_effect(cli, tmp_path):
    rep = _analyze(cli, tmp_path, sample("item_branch.py") + ":build")
    (fix,) = rep["fixes"]
    assert fix["outcome"] == "no effect" and "after" in fix and "speedup" not in fix["after"]
    assert (
        "Data-dependent branching" in fix["why"]
    )  # the break moved to the branch on the Python number


def test_no_fixes_skips_them(cli, tmp_path):
    rep = _analyze(cli, tmp_path, sample("item_scalar.py") + ":build", "--no-fixes")
    assert rep["fixes"] == [] and rep["ablation"] is None


@pytest.mark.timing
@pytest.mark.inductor
def test_breaks_are_ranked_by_what_they_cost_per_call():
    import importlib

    rep = tcdoctor.analyze(*importlib.import_module("two_breaks").build(), budget_s=0.5)
    (first,) = [f for f in rep.graph_breaks.unique if "slow_postprocess(h)" in f.code]
    (second,) = [f for f in rep.graph_breaks.unique if "graph_break()" in f.code]
    assert first.cost_s_per_call > 3 * second.cost_s_per_call > 0  # the disable()d call costs most
    assert 0 < second.cost_fraction < first.cost_fraction <= 1.0
    # what fixing a break can gain excludes the eager work that still runs without it: a bound
    # below the cost, and the findings are ranked by it
    for f in (first, second):
        assert f.gain_source == "bound" and 0 <= f.gain_s_per_call <= f.cost_s_per_call
    gains = [f.gain_s_per_call for f in rep.graph_breaks.unique]
    assert gains == sorted(gains, reverse=True)


@pytest.mark.timing
@pytest.mark.inductor
def test_ablation_puts_the_loss_of_a_tiny_model_on_dynamo(cli, tmp_path):
    rc, out, err = cli(
        "analyze",
        sample("tiny_add.py") + ":build",
        "--threads",
        "1",
        "--budget",
        "0.5",
        *ONE_PROCESS,
        "--quiet",
        "--json",
        "r.json",
    )
    assert rc == 0, err
    rep = json.loads((tmp_path / "r.json").read_text())
    ab = rep["ablation"]
    assert [r["backend"] for r in ab["rows"]] == ["eager", "aot_eager", "inductor"]
    assert ab["rows"][0]["speedup_ci"][1] < 1.0
    assert "backend='eager'" in ab["layer"] and "Dynamo" in ab["layer"]


def test_break_cost_from_nested_regions():
    us = 1000
    ev = [
        ("tcdoctor.call", 0, 1000 * us),
        ("Torch-Compiled Region: 0/0", 100 * us, 800 * us),  # frame ended by the break
        ("## Call CompiledFxGraph a ##", 120 * us, 200 * us),  # its graph
        ("aten::item", 330 * us, 50 * us),  # the op run eagerly
        ("Torch-Compiled Region: 1/0", 500 * us, 300 * us),  # the resumed frame, nested
        ("## Call CompiledFxGraph b ##", 520 * us, 250 * us),
    ]
    (call,) = break_cost.per_call(ev)
    assert (
        call["regions"] == {"0/0": 300 * us * 1000 // 1000, "1/0": 50 * us}
        and call["marked"] is True
    )
    assert call["outside_ns"] == 200 * us and call["call_ns"] == 1000 * us
    # the eager op run after the break is work that stays once the break is fixed
    assert call["region_eager"] == {"0/0": 50 * us, "1/0": 0}
    assert call["outside_eager_ns"] == 0


def test_what_fixing_a_break_gains_is_bounded_by_its_cost_minus_the_eager_work():
    """An LSTM-like break: 90% of the call is outside graphs, nearly all of it the eager op."""
    us = 1000
    ev = [
        ("tcdoctor.call", 0, 1000 * us),
        ("Torch-Compiled Region: 0/0", 10 * us, 980 * us),
        ("## Call CompiledFxGraph a ##", 20 * us, 50 * us),
        ("aten::lstm", 100 * us, 850 * us),  # the op handed to eager
        ("aten::mm", 120 * us, 100 * us),  # nested in it: counted once
    ]
    prof = break_cost.summarize(break_cost.per_call(ev))
    data = {
        "graph_breaks": {"unique": [{"id": "B1", "site": {"file": "m.py", "line": 3}}]},
        "profile": prof,
        "compile": {"break_sites": [{"compile_id": "0/0", "file": "m.py", "line": 3}]},
        "runtime": {"compiled": {"median_s": 1e-3}},
    }
    break_gain.attach(data)
    (f,) = data["graph_breaks"]["unique"]
    assert f.cost_fraction == pytest.approx(0.93)  # 980 − 50 µs of a 1,000 µs call
    assert f.gain_fraction == pytest.approx(0.08) and f.gain_source == "bound"
    assert (
        Report.from_dict({"graph_breaks": data["graph_breaks"]}).graph_breaks.unique[0].gain_text
    ).startswith(
        "fixing it gains at most 80.0 µs per call, 8% (a bound); 930.0 µs per call outside graphs"
    )


def test_a_tried_fix_replaces_the_bound_with_what_it_measured():
    report = Report.from_dict(
        {
            "runtime": {"compiled": {"median_s": 4e-3}},
            "graph_breaks": {
                "unique": [
                    {"id": "B1", "gain_s_per_call": 3e-4, "gain_source": "bound"},
                    {"id": "B2", "gain_s_per_call": 1e-4, "gain_source": "bound"},
                ]
            },
            "fixes": [
                {
                    "kind": "config",
                    "fix": "torch._dynamo.config.allow_rnn = True",
                    "addresses": ["B1"],
                    "before": {"speedup": 0.92},
                    "after": {"speedup": 0.93, "speedup_ci": [0.92, 0.96]},
                }
            ],
        }
    )
    tried.attach_gains(report)
    b2, b1 = report.graph_breaks.unique  # ranked by gain: B1's measured 43 µs < B2's bound
    assert (b1.id, b1.gain_source, b2.id) == ("B1", "tried", "B2")
    assert b1.gain_s_per_call == pytest.approx(4e-3 * (1 - 0.92 / 0.93))
    assert "measured: tried `torch._dynamo.config.allow_rnn = True`" in b1.gain_text


@pytest.mark.parametrize(
    "before, after, outcome",
    [
        # LSTM: allow_rnn removes the break, speed unchanged
        (
            {"graph_breaks": 1, "speedup_ci": [0.91, 0.92]},
            {"graph_breaks": 0, "speedup_ci": [0.92, 0.96]},
            "removes the break, no speed gain",
        ),
        # compiled autograd on a step: 5 breaks → 45
        (
            {"graph_breaks": 5, "speedup_ci": [0.9, 1.0]},
            {"graph_breaks": 45, "speedup_ci": [0.9, 1.0]},
            "multiplies graph breaks",
        ),
        (
            {"graph_breaks": 1, "speedup_ci": [0.5, 0.6]},
            {"graph_breaks": 0, "speedup_ci": [0.8, 0.9]},
            "helps",
        ),
        (
            {"graph_breaks": 1, "speedup_ci": [0.9, 1.0]},
            {"graph_breaks": 1, "speedup_ci": [0.5, 0.6]},
            "slower",
        ),
        (
            {"graph_breaks": 1, "speedup_ci": [0.9, 1.0]},
            {"graph_breaks": 1, "speedup_ci": [0.9, 1.0]},
            "no effect",
        ),
    ],
)
def test_outcome_words_match_the_figures(before, after, outcome):
    assert fixes.outcome(FixSide.of(**before), FixSide.of(**after), None)[0] == outcome


def test_an_outcome_is_a_fix_outcome_member_written_to_json_as_its_word():
    """The words that drive logic are FixOutcome members (outcomes.py); the JSON keeps the words,
    and a saved row's plain string compares equal to its member (a report loads unchanged)."""
    before = FixSide.of(graph_breaks=1, speedup_ci=[0.5, 0.6])
    judged = fixes.outcome(before, FixSide.of(graph_breaks=0, speedup_ci=[0.8, 0.9]), None)
    assert isinstance(judged.word, FixOutcome) and judged.word is FixOutcome.HELPS
    assert json.dumps({"outcome": judged.word}) == '{"outcome": "helps"}'
    saved = FixRow.from_dict(json.loads(json.dumps({"outcome": judged.word})))
    assert type(saved.outcome) is str and saved.outcome == FixOutcome.HELPS
    assert {str(w) for w in FixOutcome} >= {
        "helps", "no effect", "removes the break, no speed gain", "fails verification"
    }  # fmt: skip
    assert claims.apart([2, 3], [0, 1]) is claims.Claim.FASTER  # a speedup wholly higher
    assert claims.apart([0, 1], [2, 3]) == "slower" and claims.apart([0, 2], [1, 3]) is None


def test_a_patchs_not_slower_check_reads_the_speed_change_never_the_words():
    """judge_patch: a patch that adds a break and is slower ("adds graph breaks", no "slower" in
    its words) fails "not slower"; a word that ends in ", slower" with no slower speed does not."""
    before = FixSide.of(graph_breaks=2, speedup_ci=[0.9, 1.0])
    judged = fixes.outcome(before, FixSide.of(graph_breaks=3, speedup_ci=[0.5, 0.6]), None)
    assert judged.word == "adds graph breaks" and judged.speed is claims.Claim.SLOWER
    checks: dict = {}
    failed, word, _ = fixes.judge_patch(checks, judged)
    assert failed == ["not slower"] and word == "fails verification"
    unchanged = fixes.Outcome("removes breaks, slower", "why", claims.Claim.UNDECIDED)
    failed, word, _ = fixes.judge_patch({}, unchanged)
    assert failed == [] and word == "removes breaks, slower"


def test_a_slower_layer_is_named_first():
    report = Report.from_dict(
        {
            "options": {"backend": "inductor"},
            "runtime": {"speedup": 0.5, "speedup_ci": [0.45, 0.55]},
            "numerics": {"passed": True},
            "graph_breaks": {"count": 0},
        }
    )
    rows = [
        {"backend": "eager", "speedup": 0.6, "speedup_ci": [0.55, 0.65], "numerics_passed": True},
        {
            "backend": "aot_eager",
            "speedup": 0.55,
            "speedup_ci": [0.5, 0.6],
            "numerics_passed": True,
        },
    ]
    rows = [StrategyRow.from_dict(r) for r in rows]
    assert tried.ablation_layer(report, rows).layer.startswith("already 0.60× with backend='eager'")
    rows[0].speedup_ci = [0.98, 1.05]
    assert "backend='aot_eager'" in tried.ablation_layer(report, rows).layer


def test_a_layer_below_that_cannot_tell_is_named_with_the_slower_one_and_no_graph_is_dynamos():
    """The held-out beam search: backend='eager' 1.03× (0.78–1.32) cannot tell, 'aot_eager' 0.92×
    (0.90–0.94) is slower: the loss may start in Dynamo; and with no graph compiled no backend ran
    at all, so it is Dynamo's whatever the rows say."""
    data = {
        "options": {"backend": "inductor"},
        "runtime": {"speedup": 0.92, "speedup_ci": [0.87, 0.97]},
        "numerics": {"passed": True},
        "graphs": {"count": 1},
    }
    rows = [
        StrategyRow(backend="eager", speedup=1.03, speedup_ci=[0.78, 1.32]),
        StrategyRow(backend="aot_eager", speedup=0.92, speedup_ci=[0.90, 0.94]),
    ]
    layer = tried.ablation_layer(Report.from_dict(data), rows).layer
    assert layer.startswith(
        "already 0.92× with backend='aot_eager' (backend='eager' cannot tell: 0.78–1.32×): the "
        "loss comes from Dynamo"
    )
    assert layer.endswith("or AOTAutograd (its runtime wrappers, functionalization)")
    data["graphs"] = {"count": 0}
    layer = tried.ablation_layer(Report.from_dict(data), rows).layer
    assert layer.startswith("nothing was compiled") and "AOTAutograd" not in layer


class _Opts:
    fixes, backend = True, "inductor"


def test_drifting_numerics_plan_the_harness_settings_and_judge_them_on_numerics():
    results = {
        "numerics": {"passed": False, "rng": {"stochastic": False}},
        "runtime": {"speedup": 1.3, "speedup_ci": [1.25, 1.35]},
    }
    names = [
        s.name for s in fixes.plan(MainResults.of(results), _Opts(), 1.02) if isinstance(s, FixSpec)
    ]
    assert names == ["emulate_precision_casts"]
    # a random model that fails was compared under fallback_random already: not a fix to try again
    results["numerics"]["rng"].update(stochastic=True, fallback_random=True)
    names = [
        s.name for s in fixes.plan(MainResults.of(results), _Opts(), 1.02) if isinstance(s, FixSpec)
    ]
    assert names == ["emulate_precision_casts"]
    before = FixSide.of(**MainResults.of(results).before)
    assert (
        fixes.outcome(
            before, FixSide.of(numerics_passed=True, speedup=1.1, speedup_ci=[1.0, 1.2]), None
        )[0]
        == "helps"
    )
    assert (
        fixes.outcome(before, FixSide.of(numerics_passed=False, max_abs_err=0.1), None)[0]
        == "no effect"
    )


def test_guard_stance_is_planned_only_above_the_rule_and_says_it_is_unsafe():
    assert fixes.plan_stance(0.1, 0.2, {}) == []
    (spec,) = fixes.plan_stance(0.35, 0.2, {})
    assert spec.line.startswith('torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)')
    assert "unsafe when inputs change" in StanceFix.note


def test_the_guard_stance_fix_runs_and_is_reset_after():
    """The stance fix end to end in this process (eager backend): it runs, times, and is reset after."""
    import importlib

    from tcdoctor.options import Options
    from tcdoctor.target.workload import coerce

    w = coerce(importlib.import_module("tiny_add").build())
    spec = fixes.plan_stance(0.5, 0.2, {"speedup": 0.5, "speedup_ci": [0.45, 0.55]})[0]
    row = fixes.run(spec, w, Options(backend="eager", budget_s=0.2))
    assert row["outcome"] in ("helps", "no effect", "slower") and row["after"]["speedup_ci"], row
    assert "unsafe when inputs change" in row["why"]
    from torch._dynamo import eval_frame

    assert eval_frame._stance.skip_guard_eval_unsafe is False  # reset after the fix ran


def test_shape_fixes_cite_the_dynamic_strategy_rows_and_reach_the_advice(shared_analysis):
    from test_strategies import SEQ_LEN  # the analysis test_strategies.py reads: run once

    rep, _ = shared_analysis(*SEQ_LEN)
    rows = {f["name"]: f for f in rep["fixes"] if f["kind"] == "dynamic"}
    assert set(rows) == {"marked", "dynamic"} and all(
        r["source"] == "strategies.dynamic" for r in rows.values()
    )
    assert rows["marked"]["after"]["recompiles"] < rows["marked"]["before"]["recompiles"]
    assert any(
        "mark_dynamic" in a["text"] for a in rep["verdict"]["advice"] if a["topic"] == "tried fix"
    )


def test_heavy_page_faults_plan_pinned_malloc_thresholds_in_the_environment(monkeypatch):
    import platform

    from tcdoctor.report.sections import FixRow

    for k in fixes.MALLOC_PINNED:
        monkeypatch.delenv(k, raising=False)
    before = {"speedup": 0.96, "faults_per_call": 2206.0}
    planned = fixes.allocator_fixes(before)
    if platform.libc_ver()[0] != "glibc":
        assert planned == []
        return
    (spec,) = planned
    assert spec.env == {
        "MALLOC_MMAP_THRESHOLD_": "33554432",
        "MALLOC_TRIM_THRESHOLD_": "1073741824",
    }
    assert spec.line.startswith("MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824")
    assert fixes.allocator_fixes({**before, "faults_per_call": 255.0}) == []
    assert fixes.allocator_fixes({**before, "faults_per_call": None}) == []
    for k, v in fixes.MALLOC_PINNED.items():  # already pinned: nothing to try
        monkeypatch.setenv(k, v)
    assert fixes.allocator_fixes(before) == []
    row = FixRow(kind="env", before=before, after={"speedup": 1.05, "faults_per_call": 0.4})
    assert row.summary.startswith("2,206 page faults per compiled call → 0, 0.96× → 1.05×")
    # the row as the JSON stores it, read back into a report: the advice carries the same figures
    report = Report.from_dict({"fixes": [{**row.to_dict(), "fix": "MALLOC_…", "outcome": "helps"}]})
    (a,) = tried.advice(report)
    assert "2,206 page faults per compiled call → 0" in a.text and a.text.startswith(
        "Tried `MALLOC_…`"
    )


def test_a_mode_row_whose_process_times_eager_unlike_the_headline_gets_no_decision_interval():
    """Issue 56: the H200 GPT-2 report's reduce-overhead row comes from an analysis-type child whose
    eager step (17.9 ms) reads 26% above the timing-only process's (14.2 ms): the spread between the
    headline's processes cannot judge it, so it gets no decision interval and says why; a row
    whose eager median sits with the timing-only processes is judged as before."""
    from conftest import DATA

    report = Report.load(str(DATA / "cuda-h200" / "C.json"))
    tried.attach_decision_intervals(report)
    ro = next(r for r in report.strategies.modes if r.name == "reduce-overhead")
    assert ro.speedup and ro.decision_ci is None
    assert "timed unlike the timing-only processes" in ro.decision_method
    assert "not judged across processes" in ro.decision_method

    ro.eager_median_s = report.runtime.processes[-1].eager_median_s  # as the timing-only process
    tried.attach_decision_intervals(report)
    assert ro.decision_ci is not None and ro.decision_ci[0] < ro.speedup < ro.decision_ci[1]
