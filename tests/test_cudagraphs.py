"""CUDA graphs as PyTorch reports them (issue 50 item 4), and a forward that changes its inputs in
place named as such, never taken for randomness (item 5).

The skip reasons are PyTorch's own words: from its `cudagraphs` artifact logger on CUDA (canned
records here, as PyTorch 2.13 writes them), from its own lowering check on the CPU (a real compile
here). The target is benchmarks/gpu/cg_mutation.py, the model the H100 run misread: its forward does
`state.add_(1)` on an input.
"""

from __future__ import annotations

import json
import logging
import os

import pytest
from conftest import ROOT

from tcdoctor.probes import cudagraphs, dynamo_state

CG_MUTATION = os.path.join(ROOT, "benchmarks", "gpu", "cg_mutation.py")
# what PyTorch 2.13 logs for cg_mutation's graph on CUDA (cudagraph_utils.get_mutation_stack_trace)
CUDA_MUTATION = (
    "skipping cudagraphs due to mutated inputs (1 instances). Found from : \n"
    '   File "cg_mutation.py", line 16, in forward\n    state.add_(1)\n'
)
CUDA_CPU_TENSOR = "skipping cudagraphs due to cpu device (arg1_1)"


@pytest.fixture
def counters():
    dynamo_state.fresh()
    yield dynamo_state
    dynamo_state.fresh()


def _log(message: str) -> None:
    logging.getLogger(cudagraphs.LOGGER).warning(message)


def test_canned_cuda_skip_records_give_pytorchs_reasons_counts_and_the_fix(counters):
    from torch._dynamo.utils import counters as c
    from torch._inductor import compile_fx

    with cudagraphs.capture() as cap:
        _log(CUDA_MUTATION)
        _log(CUDA_MUTATION)
        _log(CUDA_CPU_TENSOR)
        # the one graph Inductor hands to CUDA graphs (it records at the graph's first run, which
        # this test never makes: no device is needed to hand it over)
        compile_fx.cudagraphify(
            lambda inputs: inputs,
            device_index=0,
            stack_traces=[],
            is_backward=False,
            is_inference=True,
        )
    c["inductor"]["cudagraph_skips"] = 3
    c["inductor"]["fxgraph_cache_miss"] = 5
    g = cudagraphs.summary("reduce-overhead", cap, device_type="cuda")
    # a fifth graph (a backward whose forward was skipped) is neither captured nor a skip
    assert (g["graphs"], g["skipped"], g["captured"]) == (5, 3, 1)
    assert compile_fx.cudagraphify.__name__ == "cudagraphify"  # put back after the window
    first, second = g["reasons"]
    assert first["reason"] == "skipping cudagraphs due to mutated inputs (1 instances)"
    assert first["count"] == 2 and "clone" in first["fix"]
    assert second["reason"] == CUDA_CPU_TENSOR and "move every input" in second["fix"]
    assert "PyTorch's log" in g["method"]
    # a record outside the window is not read; a mode without CUDA graphs has no figure
    _log(CUDA_MUTATION)
    assert cap.logged == [CUDA_MUTATION, CUDA_MUTATION, CUDA_CPU_TENSOR]
    assert cudagraphs.summary("default", cap) is None
    assert cudagraphs.summary("max-autotune-no-cudagraphs", cap) is None


def test_a_skip_without_a_message_says_so_and_an_unknown_reason_gets_no_fix(counters):
    from torch._dynamo.utils import counters as c

    c["inductor"]["cudagraph_skips"] = 1
    c["inductor"]["fxgraph_cache_hit"] = 1
    g = cudagraphs.summary("reduce-overhead", cudagraphs.Capture(), device_type="cuda")
    assert g["reasons"] == [{"reason": cudagraphs.NO_REASON, "count": 1, "fix": None}]
    assert cudagraphs.fix_for("skipping cudagraphs due to something new") is None
    # CompilationMetrics' field stands in when nothing was logged
    g = cudagraphs.summary("reduce-overhead", cudagraphs.Capture(), [CUDA_CPU_TENSOR], "cuda")
    assert g["reasons"][0]["reason"] == CUDA_CPU_TENSOR and "CompilationMetrics" in g["method"]


def test_the_advice_quotes_pytorch_and_never_says_the_figures_are_the_default_modes():
    from tcdoctor.thresholds import RULES
    from tcdoctor.verdict.advice import advise_mode
    from tcdoctor.verdict.figures import Figures

    g = {
        "graphs": 1,
        "skipped": 1,
        "captured": 0,
        "reasons": [
            {
                "reason": "skipping cudagraphs due to mutated inputs (1 instances)",
                "count": 1,
                "fix": cudagraphs.fix_for("mutated inputs"),
            }
        ],
    }
    from tcdoctor.report.sections.strategies import CudaGraphs

    g = CudaGraphs.from_dict(g)
    fig = Figures(mode="reduce-overhead", device="cuda:0", cudagraph_skips=1, cudagraphs=g)
    (item,) = advise_mode(fig, RULES)
    text = item.text
    assert "«skipping cudagraphs due to mutated inputs (1 instances)»" in text
    assert "1 of 1 compiled graph(s) (0 captured)" in text and "clone" in text
    assert "default mode" not in text and "nothing for it to capture" not in text
    # a mode row of its own child gets the same advice, named by its mode
    from tcdoctor.report.sections import StrategyRow

    row = StrategyRow(name="reduce-overhead", cudagraphs=g)
    (item,) = advise_mode(Figures(mode="default", mode_rows=(row,)), RULES)
    assert item.text.startswith("mode='reduce-overhead': PyTorch skipped") and "clone" in item.text
    # a saved report without the reasons: the count, and that the reason is not in it
    old = Figures(mode="reduce-overhead", device="cuda:0", cudagraph_skips=1)
    (item,) = advise_mode(old, RULES)
    text = item.text
    assert "1 skip(s)" in text and "does not hold its reason" in text


@pytest.mark.inductor
def test_cg_mutation_on_cpu_quotes_pytorch_and_is_called_mutating_not_random(cli):
    """The H100 report said "random model" and "nothing to capture on cuda:0"; on the CPU the same
    model now reads: numerics compared and passed, the input it changes named, and the skip reason
    PyTorch's own check returned, quoted (one real Inductor compile)."""
    rc, out, err = cli(
        "analyze", f"{CG_MUTATION}:build", "--mode", "reduce-overhead", "--threads", "1",
        "--budget", "0.2", "--no-warm", "--processes", "1", "--no-fixes", "--quiet",
        "--json", "r.json", "--md", "r.md", "--html", "",
    )  # fmt: skip
    assert rc == 0, out + err
    report = json.loads(open(os.path.join(cli.args[0], "r.json")).read())
    num = report["numerics"]
    assert num["passed"] is True and num["rng"]["stochastic"] is False, num.get("not_measured")
    assert num["mutates"]["inputs"] == ["args[1]"]
    state_rows = [o for o in num["outputs"] if o["path"] == "state.inputs.args[1]"]
    assert state_rows and state_rows[0]["passed"] is True  # the changed input compared
    g = report["compile"]["cudagraphs"]
    assert g["skipped"] == g["graphs"] >= 1 and g["captured"] == 0
    assert all(r["reason"].startswith("skipping cudagraphs due to") for r in g["reasons"])
    assert "check_lowering_disable_cudagraph" in g["method"]
    md = open(os.path.join(cli.args[0], "r.md")).read()
    assert "random" not in md.split("### ")[0]  # the headline and key figures
    assert "changes in place: input(s) args\\[1\\]" in md
    assert "«skipping cudagraphs due to" in md and "default mode" not in md


def test_a_forward_that_changes_its_input_is_compared_on_its_own_pristine_inputs(cli):
    """aot_eager (no RNG check): before, the compiled first call ran on the inputs eager had
    already changed; each side now has its own pristine copy, and the input is compared."""
    rc, out, err = cli(
        "analyze", f"{CG_MUTATION}:build", "--threads", "1", "--backend", "aot_eager",
        "--budget", "0.2", "--no-warm", "--processes", "1", "--no-fixes", "--quiet",
        "--json", "r.json", "--html", "",
    )  # fmt: skip
    assert rc == 0, out + err
    num = json.loads(open(os.path.join(cli.args[0], "r.json")).read())["numerics"]
    assert num["passed"] is True and num["mutates"] == {"inputs": ["args[1]"], "state": []}
    rows = {o["path"]: o for o in num["outputs"]}
    assert rows["state.inputs.args[1]"]["passed"] is True
    assert "state.inputs.args[0]" not in rows  # unchanged by both: counted, not listed


def test_inputs_snapshot_names_what_a_call_changed_and_keeps_the_pristine_value():
    import torch

    from tcdoctor.probes import outputs
    from tcdoctor.target.workload import CallArgs

    pristine = CallArgs((torch.zeros(3), torch.ones(2)), {"mask": torch.ones(1)})
    used = CallArgs((torch.zeros(3), torch.ones(2)), {"mask": torch.ones(1)})
    used.args[1].add_(1)
    snap = outputs.snapshot(torch.ones(1), inputs=(used, pristine))
    assert outputs.mutated(snap) == {"inputs": ["args[1]"], "state": []}
    assert torch.equal(snap.inputs_before["state.inputs.args[1]"], torch.ones(2))
    unchanged = dict(snap)
    assert unchanged["state.inputs.args[0]"] is outputs.UNCHANGED
    assert unchanged["state.inputs.kwargs['mask']"] is outputs.UNCHANGED
