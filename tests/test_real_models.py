"""Real models no one here wrote: Hugging Face models built from small configs, torch's own modules,
a training step with dropout and AdamW, Python randomness, a model that steps its own optimizer.

Each asserts what an independent run supports: no false numerics failure, recompile and graph-break
counts equal to what PyTorch itself logs for the same calls in a fresh process (tests/real_reference.py),
break locations in the target's own file, no negative figure. Cheap backends where the backend does not
matter; the dropout case needs Inductor (only Inductor draws random numbers with kernels of its own).
"""

from __future__ import annotations

import importlib.util
import json
import numbers
import os
import sys

import pytest
import torch
from conftest import CHEAP, ROOT
from real_reference import pytorch_counts

import tcdoctor

REAL = os.path.join(ROOT, "tests", "targets", "real")
FAST = (*CHEAP, "--json", "r.json")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

pytest.importorskip("transformers")


def target(name: str) -> str:
    return os.path.join(REAL, f"{name}.py")


def analyze(cli, tmp_path, name: str, *extra: str) -> dict:
    rc, out, err = cli("analyze", f"{target(name)}:build", *FAST, *extra)
    assert rc == 0, out + err
    return json.loads((tmp_path / "r.json").read_text())


def load_build(name: str):
    spec = importlib.util.spec_from_file_location(f"_real_{name}", target(name))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # Dynamo looks up the module of the code it traces
    spec.loader.exec_module(mod)
    return mod.build


def numbers_in(obj, path="report"):
    if isinstance(obj, bool):
        return
    if isinstance(obj, numbers.Number):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from numbers_in(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from numbers_in(v, f"{path}[{i}]")


def test_gpt2_keyword_inputs_and_its_cache_compare_leaf_by_leaf(cli, tmp_path):
    rep = analyze(cli, tmp_path, "gpt2_lm")
    n = rep["numerics"]
    assert n["passed"] is True, n
    paths = [o["path"] for o in n["outputs"] if o["kind"] == "tensor"]
    assert any("logits" in p for p in paths)
    cache = [p for p in paths if "past_key_values" in p]
    assert len(cache) == 4, paths  # 2 layers × (keys, values), each compared as a tensor
    assert all(
        o["passed"] is None
        for o in n["outputs"]
        if o["kind"] not in ("tensor", "bool", "int", "NoneType", "float", "str")
    )
    assert "input_ids=Tensor[" in rep["environment"]["workload"]["inputs"]
    assert not any("umerics" in r for r in rep["verdict"]["reasons"])


def test_python_random_model_compares_equal_when_every_rng_is_reset(cli, tmp_path):
    rep = analyze(cli, tmp_path, "py_random")
    assert rep["numerics"]["passed"] is True, rep["numerics"]
    assert rep["numerics"]["max_abs_err"] == 0.0


def test_model_stepping_its_own_scheduler_recompiles_as_pytorch_logs_in_a_fresh_process(
    cli, tmp_path
):
    rep = analyze(cli, tmp_path, "sched_forward")
    ref = pytorch_counts(target("sched_forward"), backend="aot_eager")
    assert rep["recompiles"]["count"] == ref["recompiles"] >= 1, (rep["recompiles"], ref)
    assert rep["graph_breaks"]["count"] == ref["graph_break_records"]
    (ev,) = rep["recompiles"]["events"]
    assert "lr" in ev["reason"], ev
    advice = " ".join(a["text"] for a in rep["verdict"]["advice"] if a["topic"] == "recompile")
    assert "lr=torch.tensor" in advice
    optim = [f for f in rep["graph_breaks"]["unique"] if "optim" in (f["site"]["file"] or "")]
    assert optim and all(
        f["origin"] == "pytorch" and f["file"] == target("sched_forward") for f in optim
    )
    optim_advice = [a["text"] for a in rep["verdict"]["advice"] if "optimizer.py" in a["text"]]
    assert optim_advice and not any("Fix: Remove" in t for t in optim_advice)


def test_break_inside_torch_transformer_is_located_at_the_users_call(cli, tmp_path):
    rep = analyze(cli, tmp_path, "transformer_encoder")
    ref = pytorch_counts(target("transformer_encoder"), backend="aot_eager")
    assert rep["graph_breaks"]["count"] == ref["graph_break_records"] >= 1
    (f,) = [
        f for f in rep["graph_breaks"]["unique"] if f["site"]["file"].endswith("transformer.py")
    ]
    assert f["file"] == target("transformer_encoder") and "# CALL SITE" in f["code"], f
    assert f["origin"] == "pytorch" and f["site"]["function"] == "_detect_is_causal_mask"
    (text,) = [a["text"] for a in rep["verdict"]["advice"] if a["topic"] == "graph break"]
    assert "is_causal=True" in text and "keep the value a tensor" not in text


def test_lstm_language_model_numerics_and_break_in_its_own_file(shared_analysis):
    # the analysis test_evidence.py's LSTM test reads too (conftest.shared_analysis: run once)
    rep, _ = shared_analysis(f"{target('lstm_lm')}:build", *CHEAP)
    assert rep["numerics"]["passed"] is True
    assert rep["numerics"]["tensors_compared"] == 3  # log-probs, (h, c)
    assert all(f["file"] == target("lstm_lm") for f in rep["graph_breaks"]["unique"])


def test_backward_in_forward_under_no_grad_says_so(cli):
    rc, out, err = cli(
        "analyze", f"{ROOT}/tests/targets/bad.py:backward_in_forward", *FAST, "--quiet"
    )
    assert rc == 3, err
    assert "torch.no_grad()" in err and "grad=True" in err and len(err.strip().splitlines()) == 1


def test_autocast_runs_every_call_in_bf16_and_judges_with_its_tolerance():
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    rep = tcdoctor.analyze(
        tcdoctor.Workload(model, (torch.randn(8, 16),), autocast=torch.bfloat16),
        backend="aot_eager",
        budget_s=0.2,
    )
    (out,) = rep.numerics.outputs
    assert out.dtype == "bfloat16" and out.tol == 1e-2 and out.multiplier == 3.0
    assert rep.environment["autocast"] == "bfloat16" and rep.numerics.passed is True


def _entry_rows(entries: list) -> list[tuple]:
    """Each compile entry as (compile id, start, end, and its columns): what a failure prints."""
    cols = ("entire_frame_compile_time_s", "backend_compile_time_s", "inductor_compile_time_s")
    cols += ("code_gen_time_s", "duration_us", "is_runtime", "is_forward")
    return [
        (str(m.compile_id), m.start_time_us, m.end_time_us)
        + tuple(f"{c}={getattr(m, c, None)}" for c in cols)
        for m in entries
    ]


@pytest.mark.inductor
def test_bert_training_step_with_dropout_has_no_false_numerics_failure_and_no_negative_figure(
    monkeypatch,
):
    from tcdoctor.probes import compile_phases

    seen: list = []

    def first_call(*args, **kwargs):  # the first call's own entries, printed if the test fails
        out, data, entries = real_first_call(*args, **kwargs)
        seen.append((data["first_call_s"], _entry_rows(entries)))
        return out, data, entries

    real_first_call = compile_phases.first_call
    monkeypatch.setattr(compile_phases, "first_call", first_call)
    rep = tcdoctor.analyze(
        load_build("bert_train")(), budget_s=0.5, profile_budget_s=0.2, fallback_random=True
    )
    n = rep.numerics
    assert n.rng["stochastic"] is True and n.rng["fallback_random"] is True, n.rng
    assert n.passed is True, n
    assert "fallback_random" in n.rng["method"] and n.rng["extra_compile_s"] > 0
    assert not any("umerics" in r for r in rep.verdict.reasons)
    negative = [(p, v) for p, v in numbers_in(rep.to_dict()) if v < 0 and not p.endswith("cosine")]
    assert not negative, negative
    ph = rep.compile.phases
    parts = (
        ph["dynamo_s"]
        + ph["aot_autograd_s"]
        + ph["inductor_lowering_s"]
        + ph["codegen_and_cpp_or_triton_s"]
    )
    assert parts == pytest.approx(ph["total_compile_s"]) and ph["backward_graphs_s"] > 0
    frames = [(f["compile_id"], f["function"], f["compile_s"]) for f in rep.compile.frames or []]
    assert ph["total_compile_s"] <= rep.compile.first_call_s, (ph, frames, seen)


def test_the_advised_call_site_argument_removes_the_transformer_break(tmp_path):
    src = open(target("transformer_encoder")).read()
    fixed = tmp_path / "transformer_encoder_fixed.py"
    fixed.write_text(
        src.replace("self.encoder(x, mask=mask)", "self.encoder(x, mask=mask, is_causal=True)")
    )
    assert pytorch_counts(target("transformer_encoder"))["graph_break_records"] == 1
    assert pytorch_counts(str(fixed))["graph_break_records"] == 0


class _BackwardInForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)

    def forward(self, x):
        loss = self.lin(x).float().sum()
        loss.backward()
        return loss.detach()


def test_no_grad_hint_also_under_autocast():
    """The retry with gradients on keeps autocast but must not re-enter no_grad (it did: no hint)."""
    from tcdoctor.errors import TcdoctorError

    w = tcdoctor.Workload(_BackwardInForward(), (torch.randn(2, 3),), autocast=torch.bfloat16)
    with pytest.raises(TcdoctorError) as info:
        tcdoctor.analyze(w, backend="eager", budget_s=0.1)
    assert "torch.no_grad()" in info.value.message and "grad=True" in info.value.message
