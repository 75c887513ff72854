"""Measurements that could be false: speed CI, guard-dominated loss, numerics drift, memory ordering.

The inductor tests compile for real (tens of seconds each on 2 CPU cores); they are few on purpose.
"""

import json
import math
import os
import platform

import pytest
import torch
from conftest import ROOT

import tcdoctor


@pytest.fixture(scope="module")
def overhead_report(tmp_path_factory):
    import subprocess
    import sys

    d = tmp_path_factory.mktemp("po")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "tcdoctor",
            "analyze",
            f"{ROOT}/samples/python_overhead.py:build",
            "--threads",
            "1",
            "--budget",
            "3",
            "--processes",  # cold and warm: the processes these tests read
            "1",
            "--no-fixes",  # no test here reads a tried fix
            # nor a cold-start remedy (tried when the cold first call exceeds 60 s, as it may on a
            # busy machine: two more cold compiles, and a break-even taken with the best of them)
            "--no-compile-remedies",
            "--json",
            "r.json",
            "--html",
            "r.html",
        ],
        cwd=d,
        capture_output=True,
        text=True,
        timeout=600,
        # as users run it: the cold process starts from an empty cache and pays Inductor's CPU ISA
        # probe, which these tests read (the rest of the suite is seeded: tests/conftest.py)
        env={**os.environ, "TCDOCTOR_ISA_PROBE": "cold"},
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads((d / "r.json").read_text())


@pytest.mark.timing
@pytest.mark.inductor
def test_python_loop_model_is_faster_compiled_with_ci_above_one(overhead_report):
    rt = overhead_report["runtime"]
    assert rt["speedup_ci"][0] > 1.0, rt["speedup_ci"]
    assert rt["speedup_ci"][0] <= rt["speedup"] <= rt["speedup_ci"][1]
    assert (
        rt["samples"] >= 10 and rt["eager"]["samples"] == rt["compiled"]["samples"] == rt["samples"]
    )
    assert rt["recompiles_during_timing"] == 0 and not rt["still_compiling"]


@pytest.mark.timing
@pytest.mark.inductor
def test_cold_and_warm_compile_with_phases_and_cache_hits(overhead_report):
    c = overhead_report["compile"]
    assert c["cold_s"] > c["warm_s"] > 0
    assert c["cold_cache"]["fxgraph_cache_miss"] >= 1 and c["cold_cache"]["fxgraph_cache_hit"] == 0
    assert c["warm_cache"]["fxgraph_cache_hit"] >= 1
    ph = c["phases"]
    assert ph["dynamo_s"] > 0 and ph["codegen_and_cpp_or_triton_s"] > 0
    assert ph["total_compile_s"] <= c["first_call_s"]
    assert c["native_compile_s"] and c["native_compile_s"] > 0
    # Inductor's one-off CPU ISA probe, read from the cold cache folder: a part of the first
    # frame's compile, never more than the compile. The warm process starts from the cold one's
    # probed folder: it skips the builds (build_s) but pays the load checks every new process pays
    # (VecISA's `_probe_load`), which the span ("seconds") holds between the builds, so only the
    # builds fit in cold - warm (CI read seconds 15.2 > cold - warm 14.5 > build_s 13.5)
    if platform.machine() in ("x86_64", "AMD64"):
        probe = c["isa_probe"]
        assert probe["builds"] >= 1 and 0 < probe["seconds"] <= ph["total_compile_s"], probe
        frame = next(r for r in c["graphs"]["rows"] if r["compile_id"] == probe["frame"])
        assert probe["seconds"] <= frame["cold_s"], (probe, frame)
        assert 0 < probe["build_s"] <= probe["seconds"], probe
        assert probe["build_s"] <= c["cold_s"] - c["warm_s"], probe  # the warm call never builds


@pytest.mark.timing
@pytest.mark.inductor
def test_break_even_follows_the_measured_figures(overhead_report):
    v, rt, c = overhead_report["verdict"], overhead_report["runtime"], overhead_report["compile"]
    # the least favourable decided-on process's medians: a lucky process never shortens the
    # break-even (a process left out of the headline, or a probe, is not decided on)
    decided = [p for p in rt["processes"] if not p.get("excluded") and not p.get("probe")]
    worst = min(decided, key=lambda p: p["speedup"])
    e, k = worst["eager_median_s"], worst["compiled_median_s"]
    assert v["break_even_calls"] == max(1, math.ceil((c["cold_s"] - e) / (e - k)))
    assert v["break_even"]["warm"]["calls"] < v["break_even"]["cold"]["calls"]
    assert (
        overhead_report["numerics"]["passed"] is True
        and overhead_report["numerics"]["fp64_reference"] is True
    )
    # by removal the cost can read 0 (a negative difference of medians is shown as 0); the
    # profiler's cross-check always sees the cache lookup
    g = overhead_report["guards"]
    assert g["overhead_s_per_call"] >= 0 and g["profiler_overhead_s_per_call"] > 0


@pytest.mark.timing
@pytest.mark.inductor
def test_tiny_add_is_slower_compiled_and_guard_overhead_is_the_stated_cause():
    import importlib

    w = tcdoctor.target.workload.coerce(importlib.import_module("tiny_add").build())
    rep = tcdoctor.analyze(w, budget_s=1.5)
    rt = rep.runtime
    assert rt.speedup_ci[1] < 1.0, rt
    # timed under sustained load (a busy host), the answer widens to "can't tell" (issue 43 item 4)
    sustained = rt.load.sustained if rt.load else None
    assert rep.verdict.decision == ("cant-tell" if sustained else "dont-compile"), rt.load
    # by removal (one cache entry) the guards of `x + 1` cost well under a µs, and a negative
    # difference of medians is shown as 0; the profiler's figure, kept beside it, is above 0
    assert rep.guards.overhead_s_per_call >= 0 and rep.guards.count > 0
    assert rep.guards.profiler_overhead_s_per_call > 0
    assert any("guard evaluation" in r for r in rep.verdict.reasons), rep.verdict.reasons


class BigIntermediate(torch.nn.Module):
    def forward(self, x):
        a = x * 2
        b = a + 1
        return torch.relu(b).sum(0)


@pytest.mark.inductor
def test_memory_peaks_positive_and_fusion_removes_the_big_intermediate():
    x = torch.randn(
        4096, 4096
    )  # 64 MiB: eager materialises a and b, inductor fuses into one reduction
    rep = tcdoctor.analyze(BigIntermediate(), (x,), budget_s=0.5)
    m = rep.memory
    assert m.eager_peak_bytes >= 64 * 2**20
    assert 0 < m.compiled_peak_bytes < m.eager_peak_bytes / 4
    assert (
        m.eager["rss_delta_bytes"] > 32 * 2**20
    )  # the RSS cross-check sees the eager allocation too
    assert m.method.startswith("CPU: peak of total bytes")


def _perturbing_backend(gm, example_inputs):
    def run(*args):
        out = gm(*args)
        return (
            tuple(
                o + 1e-2 if isinstance(o, torch.Tensor) and o.is_floating_point() else o
                for o in out
            )
            if isinstance(out, (tuple, list))
            else out + 1e-2
        )

    return run


def test_numerics_fail_when_the_backend_changes_results():
    from torch._dynamo.backends.registry import register_backend

    try:
        register_backend(name="tcd_perturb")(_perturbing_backend)
    except Exception:  # already registered in this process
        pass
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh())
    rep = tcdoctor.analyze(model, (torch.randn(4, 16),), backend="tcd_perturb", budget_s=0.1)
    n = rep.numerics
    assert n.passed is False and n.max_abs_err == pytest.approx(1e-2, rel=1e-3)
    assert rep.verdict.decision == "dont-compile"
    clean = tcdoctor.analyze(model, (torch.randn(4, 16),), backend="eager", budget_s=0.1)
    assert clean.numerics.passed is True and clean.numerics.max_abs_err == 0


def test_numerics_handles_dict_dataclass_and_non_tensor_outputs():
    import dataclasses

    from tcdoctor.probes import numerics, outputs

    @dataclasses.dataclass
    class Out:
        logits: torch.Tensor
        note: str

    t = torch.randn(3)
    res = numerics.compare(
        outputs.flatten({"a": Out(t, "x"), "b": (t, 3)}),
        outputs.flatten({"a": Out(t + 1, "x"), "b": (t, 3)}),
        None,
        "no fp64",
    )
    paths = [o.path for o in res["outputs"]]
    assert paths == ["out['a'].logits", "out['a'].note", "out['b'][0]", "out['b'][1]"]
    assert res["passed"] is False and res["max_abs_err"] == pytest.approx(1.0)
    assert [o.passed for o in res["outputs"]] == [False, True, True, True]


@pytest.mark.inductor
def test_reduce_overhead_on_cpu_is_reported_with_pytorchs_own_reason():
    """On the CPU nothing is captured: the advice quotes the reason PyTorch's own check returned
    (never a template), and the fix says CUDA graphs capture CUDA work only."""
    import importlib

    if torch.cuda.is_available():
        pytest.skip("on CUDA reduce-overhead does capture CUDA graphs")
    rep = tcdoctor.analyze(
        *importlib.import_module("mlp").build(), mode="reduce-overhead", budget_s=0.3
    )
    assert rep.compile.cold_cache["cudagraph_skips"] >= 1
    g = rep.compile.cudagraphs
    assert g.captured == 0 and g.skipped >= 1
    assert all(r.reason.startswith("skipping cudagraphs due to") for r in g.reasons)
    (mode,) = [a.text for a in rep.verdict.advice if a.topic == "mode"]
    assert "«skipping cudagraphs due to" in mode and "CUDA work only" in mode


@pytest.mark.inductor
def test_recompiles_and_breaks_are_the_same_with_eager_and_inductor():
    import importlib

    def summary(backend):
        w = tcdoctor.target.workload.coerce(importlib.import_module("batch_size").build())
        rep = tcdoctor.analyze(w, backend=backend, budget_s=0.1)
        return (
            rep.graph_breaks.count,
            rep.graphs.count,
            rep.recompiles.count,
            [e.reason for e in rep.recompiles.events],
            rep.recompiles.limit_hit,
        )

    assert summary("eager") == summary("inductor")


def test_numerics_walks_objects_holding_tensors_and_lists_what_it_cannot_compare():
    from tcdoctor.probes import numerics, outputs

    class Layer:
        def __init__(self, k):
            self.keys, self.values, self.dtype, self.ready = k, k * 2, k.dtype, True

    class Cache:  # like HF's DynamicCache: not a pytree node, tensors in attributes
        def __init__(self, k):
            self.layers = [Layer(k), Layer(k + 1)]
            self.kind = object()

    k = torch.randn(2, 3)
    e = outputs.flatten({"logits": k, "past": Cache(k)})
    c = outputs.flatten({"logits": k.clone(), "past": Cache(k.clone())})
    res = numerics.compare(e, c, None, "no fp64")
    assert res["tensors_compared"] == 5 and res["passed"] is True
    assert {o.kind for o in res["not_compared"]} == {"dtype", "object"}
    c_bad = outputs.flatten({"logits": k.clone(), "past": Cache(k + 0.5)})
    bad = numerics.compare(e, c_bad, None, "no fp64")
    assert bad["passed"] is False and bad["failed_outputs"] == [
        "out['past'].layers[0].keys",
        "out['past'].layers[0].values",
        "out['past'].layers[1].keys",
        "out['past'].layers[1].values",
    ]


class _Metric:
    def __init__(self, frame, backend, inductor, codegen):
        self.entire_frame_compile_time_s, self.backend_compile_time_s = frame, backend
        self.inductor_compile_time_s, self.code_gen_time_s = inductor, codegen


def test_compile_phases_of_a_training_step_are_never_negative_and_add_up():
    from tcdoctor.probes.first_call import phase_breakdown

    # as recorded for a compiled train step on torch 2.13: the backward graph is an entry of its own
    ms = [
        _Metric(0.12, None, None, None),
        _Metric(18.64, 18.57, 17.63, 17.52),
        _Metric(None, None, 0.78, 0.75),
        _Metric(0.04, None, None, None),
        _Metric(1.22, 1.07, 0.96, 0.82),
        _Metric(0.045, 0.017, 0.0008, None),
    ]
    ph = phase_breakdown(ms)
    parts = [
        ph[k]
        for k in (
            "dynamo_s",
            "aot_autograd_s",
            "inductor_lowering_s",
            "codegen_and_cpp_or_triton_s",
        )
    ]
    assert min(parts) >= 0 and sum(parts) == pytest.approx(ph["total_compile_s"])
    assert ph["total_compile_s"] == pytest.approx(0.12 + 18.64 + 0.78 + 0.04 + 1.22 + 0.045)
    assert ph["backward_graphs_s"] == pytest.approx(0.78)


def test_a_cumulative_column_counted_twice_never_makes_parts_larger_than_the_entry():
    """PyTorch's inductor and codegen columns add every timed region's duration: a region entered
    twice in one compile can read more than the frame that contains it."""
    from tcdoctor.probes.first_call import phase_breakdown

    ph = phase_breakdown([_Metric(16.8, 16.0, 28.0, 27.1)])
    assert ph["total_compile_s"] == pytest.approx(16.8)
    assert ph["codegen_and_cpp_or_triton_s"] == pytest.approx(16.0)
    assert min(ph[k] for k in ("dynamo_s", "aot_autograd_s", "inductor_lowering_s")) >= 0
    backward = _Metric(None, None, 9.0, 8.0)
    backward.duration_us = 5_000_000
    assert phase_breakdown([backward])["total_compile_s"] == pytest.approx(5.0)


def test_an_entry_compiled_inside_another_entrys_time_is_left_out():
    """Two threads: the second thread's compile lies inside the first's time, so adding both
    counts the same seconds twice; entries one after another are all counted."""
    from tcdoctor.probes.first_call import concurrent, phase_breakdown

    def timed(frame, start_s):
        m = _Metric(frame, None, None, None)
        m.start_time_us, m.end_time_us = int(start_s * 1e6), int((start_s + frame) * 1e6)
        return m

    outer, inner, after = timed(10.0, 0.0), timed(4.0, 3.0), timed(2.0, 10.5)
    assert concurrent([outer, inner, after]) == [inner]
    assert phase_breakdown([outer, inner, after])["total_compile_s"] == pytest.approx(12.0)
    assert phase_breakdown([outer, after])["total_compile_s"] == pytest.approx(12.0)
    assert concurrent([_Metric(1.0, None, None, None), outer]) == []  # no times: counted


def test_inductor_time_spent_before_the_call_is_never_part_of_its_first_call():
    """The BERT step's phases once summed to 26.55 s in a 20.92 s first call, after 1,220 tests in
    the same worker. The cause, planted here: Inductor time spent outside any Dynamo compile (an
    AOTInductor build: test_aot.py builds one in the test process) accumulates in PyTorch's runtime
    metrics context and is recorded as a `is_runtime` entry at the next compiled graph's first run,
    inside that call. The call's phases are its own compile entries only."""
    import time

    from torch._dynamo import utils as dutils

    from tcdoctor.probes import dynamo_state
    from tcdoctor.probes.first_call import first_call

    dynamo_state.fresh()
    # what aoti_compile_and_package does outside a compile: Inductor's column, timed by PyTorch
    with dutils.dynamo_timed(
        "planted_aot_build", dynamo_compile_column_us="inductor_cumulative_compile_time_us"
    ):
        time.sleep(0.5)
    compiled = torch.compile(torch.nn.Linear(4, 4), backend="aot_eager")
    x = torch.randn(2, 4)

    def call():  # an Inductor graph's first run ends the runtime context: output_code.py does this
        out = compiled(x)
        dutils.get_runtime_metrics_context().finish()
        return out

    _, data, entries = first_call(call, "linear", lambda: None)
    recorded = list(dutils.get_compilation_metrics())
    planted = [m for m in recorded if getattr(m, "is_runtime", False)]
    # the planted seconds really landed in PyTorch's list during the call (else this proves nothing)
    assert len(planted) == 1 and planted[0].inductor_compile_time_s >= 0.5, recorded
    compiles = [m for m in recorded if not getattr(m, "is_runtime", False)]
    assert entries == compiles and data["frames_compiled"] == len(compiles) >= 1
    ph = data["phases"]
    assert ph["inductor_lowering_s"] == 0 and ph["codegen_and_cpp_or_triton_s"] == 0, ph
    assert ph["backward_graphs_s"] == 0 and ph["total_compile_s"] <= data["first_call_s"], ph
    dynamo_state.fresh()


def test_an_entry_begun_before_the_window_is_another_threads_and_left_out(monkeypatch):
    """Each thread has its own metrics context: an entry recorded while this thread's call ran but
    begun before it started is another thread's compile, under way when the call began."""
    from tcdoctor.probes import dynamo_state

    recorded: list = []
    monkeypatch.setattr(dynamo_state, "_recorded", lambda: list(recorded))
    window = dynamo_state.Window()
    other, own = _Metric(3.0, None, None, None), _Metric(1.0, None, None, None)
    other.start_time_us, own.start_time_us = window.start_us - 2_000_000, window.start_us + 10
    undated = _Metric(0.5, None, None, None)  # no start time: counted, as before
    recorded += [other, own, undated]
    assert window.entries() == [own, undated] and window.left_out == [other]


def test_a_mark_reads_new_entries_from_a_full_bounded_buffer(monkeypatch):
    """PyTorch's metrics buffer is a bounded deque (64 entries unless the limit is raised): once it
    is full its length stops growing, so entries are told by the marked one, never by a length."""
    import collections

    from tcdoctor.probes import dynamo_state

    buffer: collections.deque = collections.deque(maxlen=3)
    monkeypatch.setattr(dynamo_state, "_recorded", lambda: list(buffer))
    old = [_Metric(1.0, None, None, None) for _ in range(3)]
    buffer.extend(old)  # full
    mark = dynamo_state.Mark()
    new = [_Metric(1.0, None, None, None) for _ in range(2)]
    buffer.extend(new)  # the length stays 3
    assert mark.since() == new and not mark.overflowed
    more = [_Metric(1.0, None, None, None) for _ in range(4)]
    buffer.extend(more)  # the marked entry is pushed out: all newer, one of them lost
    assert mark.since() == more[-3:] and mark.overflowed
    later = dynamo_state.Mark()
    runtime, compile_ = _Metric(1.0, None, None, None), _Metric(1.0, None, None, None)
    runtime.is_runtime = True  # PyTorch's runtime entry: no compile
    buffer.extend([runtime, compile_])
    assert later.since() == [compile_] and not later.overflowed
    # take(): each entry once, the mark moved past what it gave (the generation streamers' clock)
    assert later.take() == [compile_] and later.take() == []
    buffer.append(newest := _Metric(1.0, None, None, None))
    assert later.take() == [newest] and later.since() == []


def test_a_random_model_is_never_compared_across_two_rng_streams_unless_asked():
    from tcdoctor.probes import randomness

    model, x = torch.nn.Dropout(0.5), torch.ones(64)
    rng = randomness.rng_check("inductor", lambda: model(x))
    assert rng["stochastic"] is True and rng["fallback_random"] is False
    assert "--fallback-random" in randomness.random_not_compared(rng)
    asked = randomness.rng_check("inductor", lambda: model(x), compare_random=True)
    assert asked["fallback_random"] is True and randomness.random_not_compared(asked) is None
    same = randomness.rng_check("aot_eager", lambda: model(x))  # eager's RNG ops: comparable as is
    assert same["fallback_random"] is False and randomness.random_not_compared(same) is None
    plain = randomness.rng_check("inductor", lambda: torch.nn.Identity()(x))
    assert plain["stochastic"] is False and randomness.random_not_compared(plain) is None


@pytest.mark.inductor
def test_dropout_numerics_are_not_measured_by_default_and_not_compiled_again():
    from tcdoctor.checks.table import run_checks

    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Dropout(0.5))
    model.train()
    rep = tcdoctor.analyze(model, (torch.randn(8, 32),), budget_s=0.3)
    n = rep.numerics
    assert n.passed is None and "--fallback-random" in n.not_measured, n
    assert n.rng["stochastic"] is True and "extra_compile_s" not in n.rng
    (gate,) = run_checks(rep, require_numerics=True)
    assert not gate.passed and gate.reason.startswith("not measured (the model draws")
    assert "--fallback-random" in gate.reason
