"""When compiled is wrong (issue 64), without an Inductor compile: the classification on recorded
reruns, the recorder's bookkeeping (which graph, which call, its scalars and specialisations) with
cheap backends, the reproducer script's own comparison, the phase's gate (numerics pass: nothing
runs), the report's section and verdict line in every format, the reproducer's files beside the
reports, and the root module named "the whole model". The Inductor run on the neural ODE sample is
tests/test_miscompile_inductor.py."""

from __future__ import annotations

import json
import runpy
import time

import pytest
import torch
from conftest import saved_report

from tcdoctor.probes import diverge, miscompile, repro_script
from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report.attribution import Miscompile, Rerun
from tcdoctor.report.model import Report
from tcdoctor.verdict import judge

# what the reproducer printed (--fp64 --json) for the neural ODE sample's diverging graph, and for
# tests/targets/drift_sum.py's (Inductor's vectorised sum): the figures `classify` reads
BUG = [
    {"backend": "inductor", "fp64": False, "max_abs_err": 0.0154, "allclose": False},
    {"backend": "aot_eager", "fp64": False, "max_abs_err": 0.0, "allclose": True},
    {"backend": "inductor", "fp64": True, "max_abs_err": 0.0153, "allclose": False},
]
PRECISION = [
    {"backend": "inductor", "fp64": False, "max_abs_err": 1.2, "allclose": False},
    {"backend": "aot_eager", "fp64": False, "max_abs_err": 0.0, "allclose": True},
    {"backend": "inductor", "fp64": True, "max_abs_err": 2e-9, "allclose": True},
]


def _classify(runs: list[dict], **kw):
    """`classify` on the reruns as the report reads them (typed)."""
    return miscompile.classify([Rerun.from_dict(r) for r in runs], **kw)


def test_classify_a_wrong_value_that_float64_keeps_is_a_compiler_bug():
    kind, words = _classify(BUG)
    assert kind == "compiler_bug"
    assert words.startswith("a compiler bug, most likely (Inductor)") and "0.0153" in words


def test_classify_a_difference_float64_removes_is_precision():
    kind, words = _classify(PRECISION)
    assert kind == "precision" and words.startswith("precision")


def test_classify_aot_eager_off_blames_aot_autograd_and_missing_runs_are_not_classified():
    aot_off = [dict(BUG[0]), {**BUG[1], "allclose": False, "max_abs_err": 0.5}, dict(BUG[2])]
    assert _classify(aot_off)[0] == "aot"
    assert _classify(BUG[:2])[1] == "not classified: inductor in float64 did not run"
    agrees = [{**BUG[0], "allclose": True}, BUG[1], BUG[2]]
    kind, words = _classify(agrees)
    assert kind is None and "run alone agrees" in words


def test_a_difference_the_graph_alone_does_not_show_is_not_classified():
    # what the neural ODE's graph 1/3 gave run alone: its state (output 0), off by 0.0154 in the
    # program, agrees; only the error estimate (output 1, a cancellation) differs, by 0.00244
    alone = {
        **BUG[0],
        "max_abs_err": 0.00244,
        "outputs": [
            {"output": 0, "max_abs_err": 3e-7, "allclose": True},
            {"output": 1, "max_abs_err": 0.00244, "allclose": False},
        ],
    }
    kind, words = _classify([alone, BUG[1], BUG[2]], seen={0: 0.0154})
    assert kind is None and words.startswith("not reproduced alone: in the program output 0")
    shown = {**alone, "outputs": [{"output": 0, "max_abs_err": 0.0154, "allclose": False}]}
    assert _classify([shown, BUG[1], BUG[2]], seen={0: 0.0154})[0] == "compiler_bug"


class _OffWhenDtChanges:
    """A test double of a miscompiling backend (not a claim about any compiler): the graph's own
    eager outputs, plus 0.01 on every call whose `dt` differs from its compile-time one. It lets
    the recorder's bookkeeping be checked without an Inductor compile."""

    def __call__(self, gm, example_inputs):
        def run(*args):
            out = gm(*args)
            dt = [a for a in args if isinstance(a, torch.Tensor) and a.dtype == torch.float64]
            if dt and dt[0].item() != 0.5:
                return tuple(o + 0.01 if o.is_floating_point() else o for o in out)
            return out

        return run


def step(y, t: float, dt: float):
    return y + dt * torch.tanh(y * (1.0 + t)), (y * dt).sum()


def _record():
    torch._dynamo.reset()
    torch._dynamo.utils.clear_compilation_metrics()
    rec = diverge.Recorder(_OffWhenDtChanges(), None, time.monotonic() + 120)
    compiled = torch.compile(step, backend=rec)
    y = torch.randn(4, 8)
    with torch.no_grad():
        for t, dt in [(0.0, 0.5), (0.0, 0.5), (0.0, 0.25), (0.0, 0.125)]:
            compiled(y, t, dt)
    return rec


def test_the_recorder_names_the_first_diverging_graph_call_and_its_scalars():
    rec = _record()
    f = rec.found
    # calls 1-2 ran graph 0/0 (t and dt constants) and agreed; dt changed, Dynamo recompiled with
    # dt dynamic (0/1), and that graph's first call is the first that differs
    assert f is not None and f.compile_id == "0/1" and f.call == 1 and f.call_overall == 3
    assert f.scalars == {"L['dt']": 0.25}
    assert f.shapes == {"L['y']": [4, 8]}
    assert f.outputs[0].passed is False and f.outputs[0].max_abs_err == pytest.approx(0.01)
    assert [cid for cid, _ in f.frame_before] == ["0/0", "0/0"]
    site = diverge.graph_site("0/1")
    assert site["function"] == "step" and site["file"] == __file__
    assert site["guards"] == ["L['t'] == 0.0"]  # t stayed a constant; dt is dynamic
    # the earlier calls as the graph's inputs: dt from 0/0's guard, in the graph's input order
    g = rec.graphs["0/1"]
    assert diverge.earlier_calls(g, f) == [{g.sources.index("L['dt']"): 0.5}] * 2
    assert rec.compared == 3  # comparing stopped at the first divergence


def test_the_reproducer_loads_the_call_and_compares_each_backend(tmp_path):
    rec = _record()
    f, g = rec.found, rec.graphs["0/1"]
    written = diverge.write_repro(str(tmp_path), g, rec.inputs, f, diverge.graph_site("0/1"))
    assert written["saved_bytes"] == sum(r["bytes"] for r in written["saved"]) == 4 * 8 * 4
    text = (tmp_path / repro_script.SCRIPT_NAME).read_text()
    assert "class Repro(torch.nn.Module)" in text and "EARLIER = [" in text
    script = runpy.run_path(str(tmp_path / repro_script.SCRIPT_NAME))  # not as __main__
    mod, args = script["load"](False)
    assert isinstance(args[g.sources.index("L['dt']")], float)  # the float itself, not a tensor
    run = script["check"]("eager")  # the graph recompiled by Dynamo, eager backend: agrees
    assert run["allclose"] is True and run["max_abs_err"] == 0.0 and run["backend"] == "eager"


class _Ctx:
    def __init__(self, numerics, kind="inference"):
        self.results = {"numerics": numerics}
        self.workload = type("W", (), {"kind": kind, "name": None})()


def test_the_phase_runs_nothing_unless_numerics_fail(monkeypatch):
    def never(*_a, **_k):
        raise AssertionError("searched although numerics did not fail")

    monkeypatch.setattr(miscompile, "run_search", never)
    out = miscompile.phase_miscompile(_Ctx({"passed": True}))
    assert out["checked"] is False and out["reason"] == "numerics did not fail"
    out = miscompile.phase_miscompile(_Ctx({"passed": None, "not_measured": "random model"}))
    assert out["checked"] is False and out["reason"] == "random model"
    # failed, but the in-process API: no target file a fresh process could rebuild
    out = miscompile.phase_miscompile(_Ctx({"passed": False}))
    assert "in-process API" in out["not_measured"]
    # failed, from a target file, but the analysis's --timeout leaves too little: not started
    from tcdoctor.probes import drift

    monkeypatch.setattr(drift, "target_of", lambda _w: "/x/model.py:build")
    ctx = _Ctx({"passed": False})
    ctx.options = type("O", (), {"timeout_s": 60.0})()
    out = miscompile.phase_miscompile(ctx)
    assert "analyse again with a larger --timeout" in out["not_measured"]


RECORD = {
    "checked": True,
    "reason": "numerics failed",
    "found": {
        "compile_id": "1/3",
        "call": 1,
        "call_overall": 4,
        "shapes": {"L['y']": [8, 16]},
        "scalars": {"L['dt']": 0.310122850430365, "L['t']": 0.689877149569635},
        "outputs": [
            {
                "path": "output 0",
                "shape": [8, 16],
                "max_abs_err": 0.0154,
                "compiled_rmse_vs_fp64": 0.0055,
                "eager_rmse_vs_fp64": 8.3e-08,
                "passed": False,
            }
        ],
    },
    "site": {
        "function": "step",
        "file": "/x/neural_ode.py",
        "line": 50,
        "guards": [],
        "earlier": [{"compile_id": "1/0", "guards": ["L['t'] == 0.0", "L['dt'] == 0.5"]}],
    },
    "calls_compared": 4,
    "graphs_compared": 4,
    "reruns": BUG,
    "saved": [{"name": "l_y_", "shape": [8, 16], "dtype": "float32", "bytes": 512}],
    "saved_bytes": 512,
    "script": "print('the reproducer')\n",
    "issue": "### 🐛 Describe the bug\n",
    "cost_s": 100.0,
    "method": "m",
}


def _report_with(record: dict) -> Report:
    rep = Report.from_dict(json.loads(saved_report("two_breaks").read_text()))
    rep.numerics.passed, rep.numerics.max_abs_err = False, 0.0154
    m = Miscompile.from_dict(record)
    m.kind, m.verdict = miscompile.classify(m.reruns)
    rep.numerics.miscompile = m
    judge(rep)
    return rep


def test_every_format_names_the_graph_the_call_and_the_kind(tmp_path):
    rep = _report_with(RECORD)
    reason = rep.verdict.reasons[0]
    assert "graph 1/3 of `step` (neural_ode.py:50)" in reason
    assert "dt = 0.310122850430365" in reason and "a compiler bug, most likely (Inductor)" in reason
    advice = " ".join(a.text for a in rep.verdict.advice if a.topic == "numerics")
    assert "It is not precision" in advice and "low precision" not in advice
    term = TerminalRenderer().render(rep)
    assert "Where compiled is wrong" in term and "compiler bug, most likely" in term
    md = MarkdownRenderer().render(rep)
    assert "### Where compiled is wrong" in md and "saved 1 tensors of the call (512 B)" in md
    assert "dynamic: dt, t; compiled after 1/0 (L['t'] == 0.0, L['dt'] == 0.5)" in term
    from tcdoctor.render.html import HtmlRenderer

    html = HtmlRenderer().render(rep)
    assert "Where compiled is wrong" in html and "compiler bug, most likely" in html


def test_the_reproducer_is_written_beside_the_reports_only_for_a_bug(tmp_path):
    from tcdoctor.render.formats import Outputs
    from tcdoctor.render.write import write_report

    folder = tmp_path / "search"
    folder.mkdir()
    torch.save({"args": [], "attrs": {}}, folder / repro_script.INPUTS_NAME)
    rep = _report_with({**RECORD, "folder": str(folder)})
    out = tmp_path / "out"
    out.mkdir()
    written = write_report(rep, Outputs.of(json=str(out / "r.json"), beside=("repro",)))
    labels = [label for label, _ in written]
    assert labels == ["JSON report", "Reproducer", "Reproducer's inputs", "Issue text"]
    assert (out / repro_script.SCRIPT_NAME).read_text() == RECORD["script"]
    saved = json.loads((out / "r.json").read_text())["numerics"]["miscompile"]
    assert saved["script_path"] == str(out / repro_script.SCRIPT_NAME)
    # precision: nothing for PyTorch's tracker
    prec = _report_with({**RECORD, "folder": str(folder), "reruns": PRECISION, "script": None})
    other = tmp_path / "other"
    other.mkdir()
    written = write_report(prec, Outputs.of(json=str(other / "r.json"), beside=("repro",)))
    assert [label for label, _ in written] == ["JSON report"]
    assert prec.numerics.miscompile.kind == "precision"
    assert "It is not precision" not in " ".join(a.text for a in prec.verdict.advice)


def test_drift_at_the_root_module_is_the_whole_model():
    rep = Report.from_dict(json.loads(saved_report("two_breaks").read_text()))
    rep.numerics.passed = False
    from tcdoctor.report.attribution import DriftOrigin

    rep.numerics.drift = DriftOrigin.from_dict(
        {
            "checked": True,
            "origin": {
                "name": "",
                "class": "NeuralODE",
                "class_file": "/x/ode.py",
                "class_line": 3,
            },
            "path": [{"name": "", "class": "NeuralODE", "passed": False, "ratio": 9.0}],
        }
    )
    judge(rep)
    reason = rep.verdict.reasons[0]
    assert "The drift starts in the whole model (NeuralODE, ode.py:3)" in reason
    assert "``" not in reason
    from tcdoctor.report.phases.drift import summary

    assert summary(rep.numerics.drift).startswith("origin the whole model (NeuralODE)")


def test_specialisations_are_the_guards_that_fix_a_scalar():
    parts = [
        "___check_type_id(L['t'], 94)",
        "L['t'] == 0.0",
        "L['t'] + L['dt'] == 1.0",
        "L['y'].size()[0] == 8",
        "___check_obj_id(L['self'], 1)",
    ]
    assert diverge.specialisations(parts) == ["L['t'] == 0.0", "L['t'] + L['dt'] == 1.0"]
    assert diverge.guard_values(["L['t'] == 0.0", "L['t'] + L['dt'] == 1.0"]) == {"L['t']": 0.0}
