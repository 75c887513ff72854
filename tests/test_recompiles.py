"""Recompile counts pinned against CompilationMetrics; cheap 'eager' backend (same answers as inductor)."""

import importlib

import torch

import tcdoctor
from tcdoctor.probes import dynamo_state, recompiles
from tcdoctor.target.workload import Workload, coerce


def run(workload, backend="eager"):
    from tcdoctor.probes.first_call import build

    dynamo_state.fresh()
    compiled = build(workload.model, backend, None, workload.compile_kwargs)

    def call(fn, call_args):
        with torch.no_grad():
            return call_args.apply(fn)

    call(compiled, workload.call_args)
    data = recompiles.run(
        compiled,
        workload.model,
        "Sequential.forward" if isinstance(workload.model, torch.nn.Sequential) else "fn",
        workload,
        call,
    )
    metrics = dynamo_state.compilation_metrics()
    dynamo_state.fresh()
    return data, metrics


def test_batch_size_change_is_one_recompile_with_plain_guard():
    w = coerce(importlib.import_module("batch_size").build())
    data, metrics = run(w)
    assert data["count"] == sum(1 for m in metrics if m.recompile_reason) == 1
    (ev,) = data["events"]
    assert ev.reason == "tensor 'args[0]' size mismatch at index 0: expected 4, actual 8"
    assert ev.variant_index == 1 and ev.variant == "variant 1: (Tensor[8,64] float32)"
    assert data["limit_hit"] is False


def test_train_eval_toggle_recompiles_on_training_flag():
    w = coerce(importlib.import_module("train_eval").build())
    data, metrics = run(w)
    assert data["count"] == sum(1 for m in metrics if m.recompile_reason) == 1
    (ev,) = data["events"]
    assert (
        ".training == False" in ev.reason
        and ev.variant == "variant 1: lambda m: m.train(), then inputs"
    )


def scaled(x, k):
    return x * k


def test_recompile_limit_hit_is_detected_and_counts_match_metrics():
    limit = torch._dynamo.config.recompile_limit
    w = Workload(
        scaled,
        (torch.randn(4), 0),
        variants=[(torch.randn(4), k) for k in range(1, limit + 4)],
        compile_kwargs={"dynamic": False},
    )
    data, metrics = run(w)
    assert data["limit_hit"] is True
    assert data["count"] == sum(1 for m in metrics if m.recompile_reason)
    assert data["count"] >= limit - 1
    assert all("== " in e.reason or "k" in e.reason for e in data["events"])


def test_no_variants_no_recompiles():
    w = coerce(importlib.import_module("mlp").build())
    data, _ = run(w)
    assert data["count"] == 0 and data["events"] == [] and data["limit_hit"] is False


def test_in_process_api_reports_the_same_recompiles():
    w = coerce(importlib.import_module("batch_size").build())
    rep = tcdoctor.analyze(w, backend="eager", budget_s=0.1)
    assert rep.recompiles.count == 1
    assert rep.recompiles.events[0].function == "Sequential.forward"  # not torch's wrapper 'inner'
    assert rep.runtime.recompiles_during_timing == 0
    assert rep.guards.count and rep.guards.count > 0
