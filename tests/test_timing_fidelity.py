"""Timing fidelity: tcdoctor's compiled median must be what a minimal script would measure (issue 13).

1. The per-call path (a fresh deep copy's compiled wrapper reusing Dynamo's cache entry, no_grad
   entered per call) costs no more per call than calling the same compiled callable under one held
   no_grad, measured interleaved by timing.measure itself (the "eager" slot is the minimal call), so
   machine load cancels; and the runtime phase's timed batches do not even pay that: they hold no_grad
   across each batch (counted). Cheap backend, no Inductor.
2. A mechanism behind issue 13's conv-net bias (found here, where the 7-10% bias itself did not reproduce):
   Inductor's wrapper copies every conv weight to channels-last on each call (~44 MB per ResNet-18 call).
   With glibc's default dynamic mmap/trim thresholds, whether those pages fault again every call depends
   on the heap that earlier work left, so compiled calls can carry thousands of page faults per call in
   one process and none in another. The runtime phase reports minor page faults per call for both sides,
   and when compiled calls fault heavily a fix child started with the thresholds pinned
   (MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ in its environment) must measure none.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
import torch
from conftest import ONE_PROCESS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


@pytest.mark.timing
def test_timing_path_adds_no_per_call_cost(monkeypatch):
    """The path costs at most 7% more per call than the minimal call (issue 13's bias was 7-10%),
    decided on the interval as the product decides (benchmarks/path_cost.py has the method and why:
    the point figure of identical sides spread past the margin on a noisy host and failed this test
    in two whole timing runs, once in CI). Fails only when the interval lies wholly below 0.93 (the
    path shown costlier); skipped with its figures when it still straddles 0.93 at the end of the
    budget (a host too noisy to tell). Power (2026-11-30, `python benchmarks/path_cost.py --trials
    3`): a planted 10% cost failed 2 of 3 and was too noisy once; the path and an A/A control passed
    3 of 3. With a neighbour on the same core (`--neighbour 30,60`) the path passed 3 of 3, the A/A
    control passed 2 and was too noisy once, and the planted cost was too noisy 3 of 3: no false
    failure, and on such a host no power either (a skip says so)."""
    import path_cost

    minimal, path, sync = path_cost.setup()
    data = path_cost.measure(minimal, path, sync)
    assert data["recompiles_during_timing"] == 0
    answer, (lo, hi) = path_cost.decide(data), data["speedup_ci"]
    figures = (
        f"minimal / path {data['speedup']:.3f}, 95% interval [{lo:.3f}, {hi:.3f}] over "
        f"{data['samples']} pairs: {data['method']}"
    )
    assert answer != "fail", figures + "; " + _process_state(minimal, path)
    if answer == "too noisy":
        pytest.skip(f"too noisy to tell the path's cost against 7%: {figures}")


def _process_state(*sides) -> str:
    """What this process carries that could make one side slower, said when the test fails: the
    threads alive, a trace or profile hook, grad mode, torch's threads, and each side's minor page
    faults and time per call over 200 calls, one side after the other (both call the same compiled
    callable; after the second CI failure these read the path faster, 1.41 against 1.62 ms: the
    host's phases, which the interleaved rounds cancel and these sequential figures do not)."""
    import resource
    import threading
    import time

    out = [
        f"threads {[t.name for t in threading.enumerate()]}",
        f"trace {sys.gettrace()!r}, profile {sys.getprofile()!r}",
        f"grad {torch.is_grad_enabled()}, torch threads {torch.get_num_threads()}",
    ]
    with torch.no_grad():
        for name, fn in zip(("minimal", "tcdoctor"), sides):
            faults, t = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
            for _ in range(200):
                fn()
            per = (time.perf_counter() - t) / 200
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
            out.append(f"{name}: {per * 1e3:.3f} ms and {faults / 200:.1f} minor faults per call")
    return "; ".join(out)


def test_timed_batches_hold_no_grad_instead_of_entering_it_per_call(monkeypatch):
    """The runtime phase holds the workload's no_grad across each timed batch, as a hand-written loop
    does, instead of entering it (flipping grad mode) on every call (~3% of a compiled HF GPT-2 call).
    Counted, not timed: no_grad entries against calls."""
    from tcdoctor.options import Options
    from tcdoctor.run.runner import PhaseRunner
    from tcdoctor.target.workload import Workload

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    runner = PhaseRunner(
        Workload(model, (torch.randn(2, 8),)),
        Options(backend="eager", budget_s=0.3),
        sink=lambda ev: None,
    )
    runner.measure("environment")
    runner.measure("eager")
    runner.measure("compile")
    entries, calls, grad_seen = [0], [0], set()
    enter, forward = torch.no_grad.__enter__, torch.nn.Sequential.forward

    def counting_enter(self):
        entries[0] += 1
        return enter(self)

    def recording_forward(self, *a, **k):
        calls[0] += 1
        grad_seen.add(torch.is_grad_enabled())
        return forward(self, *a, **k)

    monkeypatch.setattr(torch.no_grad, "__enter__", counting_enter)
    monkeypatch.setattr(torch.nn.Sequential, "forward", recording_forward)
    rt = runner.measure("runtime")
    monkeypatch.undo()
    # eager and compiled samples (samples_per_round of them in each side's round of each pair,
    # after its untimed switch sample; pairs rerun under load included), plus the two estimates
    pairs = rt["samples"] + (rt.get("load") or {}).get("retimed_pairs", 0)
    batches = 2 * pairs * (rt["samples_per_round"] + 1) + 2
    assert grad_seen == {False}  # every eager timed call ran under no_grad (the compiled
    # wrapper calls the traced graph, not this forward)
    assert rt["calls_per_sample"] >= 10 and calls[0] >= rt["samples"] * rt["calls_per_sample"]
    assert entries[0] <= batches + 1, (entries, batches, calls)  # + 1: the warm-up


RESNET_SMALL = os.path.join(ROOT, "benchmarks", "resnet18.py") + ":build"


def test_heavy_page_faults_are_reported_and_pinned_malloc_is_tried_in_a_fresh_process(
    cli, tmp_path, monkeypatch
):
    """ResNet-18 at 64x64 (same 11 M weights, fast calls) with glibc's mmap threshold fixed at 128 KiB,
    so every big block is returned to the OS and faulted in again each call, whatever the heap's
    history: the runtime phase reports the faults, and the planned fix child, started with the
    thresholds pinned in its environment, measures none per compiled call. aot_eager: the faults
    come from the calls' big blocks, not from a backend's kernels (about 1,100 per compiled call
    here, against 256 needed), and no process waits on a C++ compile."""
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc malloc thresholds")
    monkeypatch.setenv("TCD_RES", "64")
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", str(128 << 10))
    code, out, err = cli(
        "analyze",
        RESNET_SMALL,
        "--backend",
        "aot_eager",
        "--threads",
        "1",
        "--budget",
        "0.5",
        *ONE_PROCESS,
        # the env fix child runs however long the cold first call was (the default budget is 4× it)
        "--fix-budget",
        "600",
        "--quiet",
        "--json",
        "r.json",
        "--html",
        "",
        timeout=600,
    )
    assert code in (0, 4), err[-2000:]
    rep = json.loads((tmp_path / "r.json").read_text())
    faults = rep["runtime"]["compiled"].get("minor_faults_per_call")
    assert faults is not None and faults >= 256, faults
    (row,) = [r for r in rep["fixes"] if r["kind"] == "env"]
    assert row["fix"].startswith("MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=")
    assert row["before"]["faults_per_call"] == faults
    assert row["after"]["faults_per_call"] < 64, row
    # measured: one of the speed outcomes (experiments/fixes.py `outcome`; which one is the
    # speed's, not this test's subject), never an error or "not tried"
    assert row["outcome"] in ("helps", "no effect", "slower", "within the noise"), row
    assert any("page faults per compiled call" in a["text"] for a in rep["verdict"]["advice"])


@pytest.mark.timing
def test_call_path_costs_no_more_than_the_call_on_a_real_model():
    """tcdoctor's per-call path (no_grad, kwargs) vs the same eager HF GPT-2 call under a held no_grad.

    Before issue 13's fix the path went through an ExitStack: 797 µs vs 758 µs per call here (+5%), a
    fixed cost that lowered GPT-2's measured speedup by ~5%. Paired, interleaved, medians; no compile.
    """
    import statistics
    import time

    pytest.importorskip("transformers")
    from tcdoctor.probes import calls
    from tcdoctor.target.load import load

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
