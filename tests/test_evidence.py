"""The verdict follows the report's own evidence, on the kinds of model users brought (issue 19):
an LSTM whose fix removes the break but not the loss, a `.item()` normaliser, a GPT-2 AMP training
step written by its user, activation-checkpointed training, a hand-written beam search whose break
has no fix (issue 56 item 5). Cheap backends (the rules, not the
kernels, are under test); `tests/consistency.py` holds the checks every report must pass."""

from __future__ import annotations

import json
import os

import pytest
from conftest import CHEAP, NO_TIMING_PROCESSES, ROOT
from consistency import contradictions

from tcdoctor.report.model import Report
from tcdoctor.thresholds import Rules

REAL = os.path.join(ROOT, "tests", "targets", "real")
FAST = (*CHEAP, "--json", "r.json")
# CHEAP with the warm process, which profiles: the bound on what fixing a break gains
PROFILED = (
    "--threads", "1", "--backend", "aot_eager", "--budget", "0.3", *NO_TIMING_PROCESSES,
    "--no-submodules", "--quiet",
)  # fmt: skip
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _analyze(cli, tmp_path, target: str, *extra: str) -> Report:
    rc, out, err = cli("analyze", os.path.join(REAL, target), *FAST, *extra, timeout=600)
    assert rc == 0, out + err
    rep = Report.from_dict(json.loads((tmp_path / "r.json").read_text()))
    assert contradictions(rep) == [], rep.verdict.reasons
    return rep


def test_lstm_a_fix_that_removes_the_break_decides_only_if_it_pays(shared_analysis):
    # the analysis test_real_models.py's LSTM test reads too (conftest.shared_analysis: run once)
    data, _ = shared_analysis(os.path.join(REAL, "lstm_lm.py:build"), *CHEAP)
    rep = Report.from_dict(data)
    assert contradictions(rep) == [], rep.verdict.reasons
    (fix,) = [r for r in rep.fixes if r.name == "allow_rnn"]
    assert fix.after and fix.after.graph_breaks == 0  # the break goes away with it
    rules = Rules.from_dict(rep.verdict.rules)
    if rep.verdict.decision == "compile-after-fixes":
        assert fix.significantly_faster(rules) and "allow_rnn" in rep.verdict.reasons[0]
    elif not rep.runtime.significantly_faster(rules):
        # slower: don't compile; an interval that straddles the threshold: can't tell yet
        assert rep.verdict.decision in ("dont-compile", "cant-tell")
        assert any(
            "Tried `torch._dynamo.config.allow_rnn = True`" in r for r in rep.verdict.reasons
        )
    if fix.outcome == "helps":
        assert fix.after.speedup_ci[0] > fix.before.speedup_ci[1]


def test_item_normaliser_tried_fix_is_the_evidence(cli, tmp_path):
    rep = _analyze(cli, tmp_path, "item_norm.py:build")
    (fix,) = [r for r in rep.fixes if r.name == "capture_scalar_outputs"]
    assert fix.after.graph_breaks == 0
    (b,) = rep.graph_breaks.unique
    assert b.origin == "user" and b.gain_source == "tried" and b.gain_fix == fix.fix


@pytest.mark.skipif(
    __import__("importlib").util.find_spec("transformers") is None, reason="transformers"
)
def test_gpt2_amp_step_breaks_are_not_the_users_and_the_headline_agrees_with_the_table(
    cli, tmp_path
):
    rep = _analyze(cli, tmp_path, "gpt2_amp_train.py:build", "--no-fixes")
    assert rep.graph_breaks.unique and not any(f.users for f in rep.graph_breaks.unique)
    # the source-patch planner, on these very findings: no patch in library code, none listed
    from tcdoctor.experiments import proving

    unique = [f.to_dict() for f in rep.graph_breaks.unique]
    planned = proving.plan(
        {"graph_breaks": {"graph_breaks": {"unique": unique}}},
        os.path.join(REAL, "gpt2_amp_train.py:build"),
        {},
    )
    assert planned == ([], []), planned
    assert rep.verdict.decision != "compile-after-fixes"
    train = rep.verdict.recommendations["training"]
    # a custom train_step: only the whole step is compiled, and the table says what was not measured
    assert "not measured" in train["text"] or train["choice"] != "eager"
    if train["choice"] == "eager":
        assert rep.verdict.decision in ("dont-compile", "cant-tell")


def test_checkpointed_training_never_asks_the_user_to_fix_pytorchs_breaks(cli, tmp_path):
    rep = _analyze(cli, tmp_path, "ckpt_train.py:build", "--no-fixes")
    assert rep.graph_breaks.unique and not any(f.users for f in rep.graph_breaks.unique)
    # the step's backward()/zero_grad() breaks are PyTorch's APIs, called as a user's step calls them:
    # filed as PyTorch's, never as tcdoctor's own code
    assert {f.origin for f in rep.graph_breaks.unique} == {"pytorch"}
    texts = [a.text for a in rep.verdict.advice if a.topic == "graph break"]
    assert any("the standard training step's call of Tensor.backward" in t for t in texts), texts
    assert not any("fixing them may gain more" in r for r in rep.verdict.reasons)
    assert rep.verdict.decision != "compile-after-fixes"


def test_a_torch_api_dynamo_cannot_trace_is_pytorchs_break_not_the_users():
    from tcdoctor.probes.graph_breaks import called_api

    backward = {"gb_type": "Unsupported Tensor.backward() call", "full_reason": ""}
    assert called_api(backward) == {"function": "Tensor.backward", "file": None}
    skipped = {
        "gb_type": "Attempted to inline function marked as skipped",
        "full_reason": "Developer debug context: qualname: Optimizer.zero_grad, name: inner, "
        "filename: `/x/site-packages/torch/_compile.py`, skip reason: file matches MOD_SKIPLIST",
    }
    assert called_api(skipped)["function"] == "Optimizer.zero_grad"
    # a user function marked as skipped (torch.compiler.disable on the user's own code) stays theirs
    own = {**skipped, "full_reason": skipped["full_reason"].replace("/x/site-packages/torch", ROOT)}
    assert called_api(own) is None
    assert called_api({"gb_type": "Unsupported Tensor.item() call", "full_reason": ""}) is None


def test_tcdoctors_own_files_are_never_the_users_and_its_step_is_named():
    import pathlib

    import tcdoctor
    from tcdoctor.target.userframes import is_user_file, origin_of

    pkg = pathlib.Path(tcdoctor.__file__).parent
    files = sorted(pkg.rglob("*.py"))
    assert len(files) > 20 and not any(is_user_file(str(f)) for f in files)
    assert origin_of(str(pkg / "experiments" / "training.py")) == "step"
    assert origin_of(os.path.join(REAL, "lstm_lm.py")) == "user"


def test_a_beam_search_whose_break_has_no_fix_is_dont_compile_with_the_rewrite_bound(
    shared_analysis,
):
    """The held-out beam search (tests/targets/real/beam_search.py): `.tolist()` on float topk
    scores drives a Python loop, Dynamo skips the whole forward and compiles no graph. No patch,
    switch or named rewrite applies, and PyTorch's hint (an integer tensor) cannot: "don't compile
    (yet)" with what a rewrite by hand could gain, never "after these fixes"."""
    data, out = shared_analysis(os.path.join(REAL, "beam_search.py:build"), *PROFILED)
    rep = Report.from_dict(data)
    assert contradictions(rep) == [], rep.verdict.reasons
    assert rep.graphs.count == 0 and rep.graph_breaks.skipped_frames == 1
    (b,) = rep.graph_breaks.unique
    assert b.reason == "Tensor.tolist() with non-integer tensor" and b.frame_skipped and b.users
    assert b.gain_source == "bound" and b.gain_s_per_call is not None, b
    assert rep.verdict.decision == "dont-compile", rep.verdict.reasons
    assert "VERDICT: Don't compile it (yet)" in out
    (line,) = [r for r in rep.verdict.reasons if r.startswith("No fix tcdoctor can name")]
    assert "no mechanical patch" in line and "a rewrite by hand could gain up to" in line
    assert any(r.startswith("Nothing was compiled") for r in rep.verdict.reasons)
    (advice,) = [a.text for a in rep.verdict.advice if a.topic == "graph break"]
    assert "Fix:" not in advice and "an integer tensor for `tolist()`, cannot apply" in advice
