"""Timing fidelity: tcdoctor's compiled median must be what a minimal script would measure (issue 13).

1. The timing path itself (a fresh deep copy's compiled wrapper reusing Dynamo's cache entry, no_grad
   entered per call through the workload's context) costs no more per call than calling the same
   compiled callable under one held no_grad, measured interleaved by timing.measure itself (the
   "eager" slot is the minimal call), so machine load cancels. Cheap backend, no Inductor.
2. A mechanism behind issue 13's conv-net bias (found here, where the 7-10% bias itself did not reproduce):
   Inductor's wrapper copies every conv weight to channels-last on each call (~44 MB per ResNet-18 call).
   With glibc's default dynamic mmap/trim thresholds, whether those pages fault again every call depends
   on the heap that earlier work left, so compiled calls can carry thousands of page faults per call in
   one process and none in another. The runtime phase reports minor page faults per call for both sides;
   with the thresholds pinned (MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ in the environment, which
   the children inherit) a compiled call must not fault at all.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def test_timing_path_adds_no_per_call_cost():
    import smallconv

    from tcdoctor.probes import timing
    from tcdoctor.run.options import Options
    from tcdoctor.run.runner import PhaseRunner
    from tcdoctor.workload import Workload

    torch.set_num_threads(1)
    model, inputs = smallconv.build()
    runner = PhaseRunner(
        Workload(model, inputs), Options(backend="eager", budget_s=2.0), sink=lambda ev: None
    )
    runner.environment()
    runner.eager()
    runner.compile()
    copy_b, args = runner.compiled, tuple(runner.workload.call_args.args)

    def minimal():  # what a minimal script does: the same compiled callable, no_grad held by the caller
        return copy_b(*args)

    with torch.no_grad():
        data = timing.measure(minimal, runner.compiled_fn, runner.sync, 2.0)
    # speedup = minimal median / tcdoctor-path median: the path may cost at most 7% more per call (issue 13 was 7-10%)
    assert data["recompiles_during_timing"] == 0
    assert data["speedup"] > 0.93, (
        data["method"] + f": tcdoctor's path {1 / data['speedup']:.3f}x the minimal call"
    )


RESNET_SMALL = os.path.join(ROOT, "benchmarks", "resnet18.py") + ":build"


@pytest.mark.inductor
def test_child_reports_page_faults_and_none_with_pinned_malloc(cli, tmp_path, monkeypatch):
    """The real cold child on ResNet-18 at 32x32 (same 11 M weights, fast calls): page faults per call
    reported, and none per compiled call with malloc thresholds pinned (~4,000 per call seen unpinned)."""
    monkeypatch.setenv("TCD_RES", "32")
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", str(32 << 20))
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", str(1 << 30))
    code, out, err = cli(
        "analyze",
        RESNET_SMALL,
        "--budget",
        "0.5",
        "--no-warm",
        "--no-fixes",
        "--quiet",
        "--json",
        "r.json",
        "--html",
        "",
        timeout=600,
    )
    assert code in (0, 4), err[-2000:]
    runtime = json.loads((tmp_path / "r.json").read_text())["runtime"]
    faults = runtime["compiled"].get("minor_faults_per_call")
    assert faults is not None, (
        "runtime phase must report minor page faults per call (resource.getrusage)"
    )
    assert faults < 64, (
        f"compiled calls page-fault {faults:.0f} times per call in the analysis child"
    )
    assert runtime["eager"]["minor_faults_per_call"] < 64


def test_call_path_costs_no_more_than_the_call_on_a_real_model():
    """tcdoctor's per-call path (no_grad, kwargs) vs the same eager HF GPT-2 call under a held no_grad.

    Before issue 13's fix the path went through an ExitStack: 797 µs vs 758 µs per call here (+5%), a
    fixed cost that lowered GPT-2's measured speedup by ~5%. Paired, interleaved, medians; no compile.
    """
    import statistics
    import time

    pytest.importorskip("transformers")
    from tcdoctor.probes import calls
    from tcdoctor.target import load

    w = load(os.path.join(ROOT, "tests", "targets", "real", "gpt2_lm.py") + ":build")
    cpu = torch.device("cpu")

    def plain():
        return w.model(*w.inputs, **w.kwargs)

    def path():
        return calls.call(w.model, w.call_args, w, cpu)

    def median_ratio() -> float:
        ratios = []
        for r in range(150):
            times = {}
            order = (
                (("plain", plain), ("path", path)) if r % 2 else (("path", path), ("plain", plain))
            )
            for name, fn in order:
                t0 = time.perf_counter()
                for _ in range(5):
                    fn()
                times[name] = time.perf_counter() - t0
            ratios.append(times["path"] / times["plain"])
        return statistics.median(ratios)

    with torch.no_grad():
        for _ in range(10):
            plain(), path()
        # here: 1.011-1.022 with plain `with` statements, 1.036-1.052 through the old ExitStack; the
        # better of two medians keeps a load spike from failing it, not a cost present in both
        medians = [median_ratio(), median_ratio()]
    assert min(medians) < 1.03, medians
