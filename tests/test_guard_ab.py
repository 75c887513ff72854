"""Guard cost by removing the guards (probes/guard_ab.py): its arithmetic on literal figures, when it
is not exact, and the figure an analysis reports on a Hugging Face model called with keyword inputs
against the same A/B done by hand.

Backend `eager`: guards are evaluated with any backend, and it compiles without Inductor.
"""

import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import time
from typing import NamedTuple

import pytest
import torch
from conftest import NO_TIMING_PROCESSES, ROOT

from tcdoctor.probes import guard_ab
from tcdoctor.report.events import Event
from tcdoctor.report.sections import GUARDS_BY_PROFILER, GUARDS_BY_REMOVAL, guard_cost

US = 1e-6
T5 = os.path.join(ROOT, "tests", "targets", "real", "t5_kwargs.py")


def _target():
    spec = importlib.util.spec_from_file_location("t5_kwargs", T5)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_removal_cost_is_the_difference_of_medians_with_a_paired_ci():
    with_s = [110 * US, 112 * US, 108 * US, 111 * US, 109 * US, 113 * US, 110 * US]
    without_s = [100 * US, 101 * US, 99 * US, 100 * US, 98 * US, 102 * US, 100 * US]
    r = guard_ab.removal_cost(with_s, without_s)
    assert r["overhead_s_per_call"] == pytest.approx(10 * US)
    assert r["with_guards_median_s"] == pytest.approx(110 * US)
    assert r["without_guards_median_s"] == pytest.approx(100 * US)
    lo, hi = r["overhead_ci_s"]
    assert 0 <= lo <= 10 * US <= hi <= 110 * US
    assert r["clamped"] is None and r["pairs"] == 7
    assert r["fraction_of_call"] == pytest.approx(10 / 110)


def test_removal_cost_below_zero_is_shown_as_zero_and_says_so():
    r = guard_ab.removal_cost([100 * US, 99 * US, 101 * US], [103 * US, 102 * US, 104 * US])
    assert r["overhead_s_per_call"] == 0.0 and r["raw_difference_s"] == pytest.approx(-3 * US)
    assert r["overhead_ci_s"][0] == 0.0 and r["overhead_ci_s"][1] >= 0.0
    assert "below zero" in r["clamped"]


def test_several_cache_entries_fall_back_to_the_profiler_with_the_reason():
    class M:  # CompilationMetrics' fields that matter here
        def __init__(self, cid, reason=None):
            self.compile_id, self.recompile_reason, self.co_name = cid, reason, "forward"

    assert guard_ab.several_entries([M("0/0"), M("1/0")]) is None
    why = guard_ab.several_entries([M("0/0"), M("0/1", "size mismatch")])
    assert "several cache entries" in why and "0/1" in why
    shown = guard_cost(
        {"guard_overhead_s_per_call": 5 * US, "method": "profiler", "guard_ab": {"not_exact": why}}
    )
    assert shown["overhead_s_per_call"] == 5 * US and shown["overhead_source"] == GUARDS_BY_PROFILER
    assert (
        "not by removal" in shown["overhead_method"]
        and "several cache entries" in shown["overhead_method"]
    )
    ab = guard_ab.removal_cost([11 * US] * 3, [10 * US] * 3)
    shown = guard_cost({"guard_overhead_s_per_call": 5 * US, "method": "p", "guard_ab": ab})
    assert shown["overhead_source"] == GUARDS_BY_REMOVAL
    assert shown["overhead_s_per_call"] == pytest.approx(1 * US)
    assert shown["profiler_overhead_s_per_call"] == 5 * US  # the cross-check is kept


def _compiled_t5():
    model, kwargs = _target().model_and_kwargs()
    compiled = torch.compile(model, backend="eager")
    with torch.no_grad():
        for _ in range(5):
            compiled(**kwargs)
    return lambda: compiled(**kwargs)


class AB(NamedTuple):
    """A by-hand A/B: the guard cost (difference of medians), its 95% bootstrap CI, and the
    with-guards median (the call's time while it was measured: how fast the host ran then)."""

    cost: float
    ci: tuple[float, float]
    with_s: float


class Window(NamedTuple):
    """One WINDOW_S window of the by-hand A/B: its per-sample times with and without guards."""

    w: list[float]
    wo: list[float]

    @property
    def with_s(self) -> float:
        return statistics.median(self.w)


def _ab(w: list[float], wo: list[float]) -> AB:
    """The A/B's figures from paired samples: difference of medians, 95% paired bootstrap CI."""
    rng, n = random.Random(1), len(w)
    diffs = sorted(
        statistics.median([w[i] for i in idx]) - statistics.median([wo[i] for i in idx])
        for idx in (rng.choices(range(n), k=n) for _ in range(500))
    )
    return AB(
        statistics.median(w) - statistics.median(wo), (diffs[12], diffs[487]), statistics.median(w)
    )


def _pooled(windows: list[Window]) -> AB:
    """One A/B of several windows' samples together."""
    return _ab([t for x in windows for t in x.w], [t for x in windows for t in x.wo])


def _window(call, seconds: float) -> Window:
    """The A/B written by hand: alternate samples of two calls with and without guard evaluation
    for `seconds`."""

    def sample(skip):
        with torch.compiler.set_stance("default", skip_guard_eval_unsafe=skip), torch.no_grad():
            t0 = time.perf_counter()
            call()
            call()
            return (time.perf_counter() - t0) / 2

    w, wo, end = [], [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        w.append(sample(False))
        wo.append(sample(True))
    return Window(w, wo)


def _windows(call, seconds: float) -> list[Window]:
    """By-hand A/B windows of WINDOW_S, one after another for `seconds`."""
    end, out = time.perf_counter() + seconds, []
    while time.perf_counter() < end:
        out.append(_window(call, WINDOW_S))
    return out


# The host's speed moves continuously (see the docstring): windows short enough to keep one speed
# each; the by-hand windows the analysis's A/B is compared with are those whose call ran within
# SAME_SPEED of the analysis's (2%: the with-guards median's spread between neighbouring windows),
# at least MIN_MATCHED of them, pooled: 2 s of pairs, as the analysis's A/B had
# (--profile-budget 2).
WINDOW_S = 0.5
SAME_SPEED = 0.02
MIN_MATCHED = 4
MORE_S = 60.0  # how long the test may go on drawing windows to meet the analysis's speed


@pytest.mark.timing
def test_guard_cost_of_an_hf_model_with_kwargs_matches_the_a_b_by_hand(cli, tmp_path):
    """The analysis's guard cost (the warm process's A/B, one cache entry) against the same A/B
    written by hand, in this process before and after the analysis and in a fresh process, at the
    host speed the analysis's A/B met. (In-process, tcdoctor's timed copy of a T5 recompiles on its
    config's identity, so there the A/B is not exact and the profiler's figure is shown.)

    Pitfall: this shared virtual machine's speed moves continuously, in episodes of a fraction of a
    second to seconds, and the guards' cost moves with it far more than the rest of the call:
    measured in one process over 32 s of 0.4-s windows, the call with guards took 1.13-1.44 ms and
    the guards 128-293 µs of it, while the call without guards took 1.00-1.19 ms. So a by-hand A/B
    taken at another speed is of another host: the CI failure of stop 72 read 205 µs in the
    analysis (its call 1.221 ms) against by-hand 138-170 µs with calls up to ~1.14 ms, which the
    earlier rule (the analysis's call within 15% of the by-hand calls' range) took for a bracket,
    though 15% of the call is about the guards' whole cost. Hence short by-hand windows, and the
    analysis's figure compared with the A/B of those windows whose call ran within SAME_SPEED of
    the analysis's, their samples pooled.

    What it can and cannot tell: an error on the without-guards side (guards partly evaluated, the
    not-exact case) moves the figure away from the matched windows' (a planted 100 µs busy wait
    per skipped call failed it: 239 µs against 341 µs by hand, margin 63 µs; a planted 60 µs met a
    host too unsteady to compare); an analysis call time outside every by-hand window's fails; an
    error that lengthened only the with-guards samples, within the host's range, would look like a
    slower host (matched to slower windows, whose guards cost more)."""
    torch._dynamo.reset()
    torch.set_num_threads(1)
    call = _compiled_t5()
    windows = _windows(call, 6.0)
    rc, out, err = cli(
        "analyze",
        f"{T5}:build",
        "--backend",
        "eager",
        "--threads",
        "1",
        "--budget",
        "0.2",
        "--profile-budget",
        "2",
        "--no-fixes",
        *NO_TIMING_PROCESSES,  # the A/B is the warm process's; no timing-only process
        "-q",
        "--html",
        "",
        "--json",
        "r.json",
    )
    assert rc == 0, (out, err)
    windows += _windows(call, 6.0)
    g = json.loads((tmp_path / "r.json").read_text())["guards"]
    assert g["overhead_source"] == GUARDS_BY_REMOVAL, (g["overhead_method"], g.get("removal"))
    assert g["removal"]["pairs"] >= guard_ab.MIN_PAIRS and g["profiler_overhead_s_per_call"] > 0
    cost, (lo, hi) = g["overhead_s_per_call"], g["overhead_ci_s"]
    assert 0 <= lo <= cost <= hi and cost <= g["removal"]["with_guards_median_s"]
    everything = _pooled(windows)
    assert everything.cost > 0, everything  # ~2,000 guards: above a sample's noise
    # The analysis's figure is one process's (the warm one); processes of one script may differ
    # (issue 27), so a fresh process's windows join the comparison too.
    windows += _by_hand_in_a_fresh_process()
    speed = g["removal"]["with_guards_median_s"]

    def matched() -> list[Window]:
        return [x for x in windows if abs(x.with_s / speed - 1) <= SAME_SPEED]

    end = time.perf_counter() + MORE_S
    while len(matched()) < MIN_MATCHED and time.perf_counter() < end:
        windows += _windows(call, 3.0)
    torch._dynamo.reset()
    same = matched()
    speeds = sorted(round(x.with_s * 1e6) for x in windows)
    # An analysis call time outside every speed the host ran by hand is the analysis's error; one
    # inside them, met by too few windows, is a host too unsteady to compare at that speed (as in
    # tests/test_fidelity_in_process.py, a skip that gives its figures).
    assert speeds[0] <= speed * 1e6 <= speeds[-1], (
        f"the analysis's with-guards median ({speed * 1e6:.0f} µs) lies outside every by-hand "
        f"window's ({speeds[0]}-{speeds[-1]} µs)"
    )
    if len(same) < MIN_MATCHED:
        pytest.skip(
            f"{len(same)} of {len(windows)} by-hand windows ran the call within "
            f"{SAME_SPEED:.0%} of the analysis's with-guards median ({speed * 1e6:.0f} µs; "
            f"by hand {speeds[0]}-{speeds[-1]} µs, median {statistics.median(speeds):.0f}): the "
            f"host too unsteady to compare at that speed (the analysis's guard cost "
            f"{cost * 1e6:.0f} µs)"
        )
    # the matched windows' samples pooled: one by-hand A/B at the analysis's speed
    hand = _pooled(same)
    margin = 0.10 * hand.cost + (hi - lo) / 2 + (hand.ci[1] - hand.ci[0]) / 2
    assert abs(cost - hand.cost) <= margin, (
        cost,
        speed,
        hand,
        len(same),
        margin,
        g["profiler_overhead_s_per_call"],
    )


def _by_hand_in_a_fresh_process(seconds: float = 3.0) -> list[Window]:
    """The same by-hand A/B windows (one thread) in a fresh Python process, for `seconds`."""
    code = (
        "import json, sys, torch; sys.path.insert(0, sys.argv[1]); torch.set_num_threads(1); "
        "import test_guard_ab as t; "
        "print(json.dumps(t._windows(t._compiled_t5(), float(sys.argv[2]))))"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)), str(seconds)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return [Window(w, wo) for w, wo in json.loads(p.stdout.strip().splitlines()[-1])]


def _events(profile_data):
    runtime = {"compiled": {"median_s": 100 * US}}
    return [
        Event(event="done", phase="runtime", data=runtime),
        Event(event="done", phase="profile", data=profile_data),
    ]


def test_the_stance_fix_is_planned_from_the_a_b_figure_when_there_is_one():
    from tcdoctor.experiments.plan import stance_fix
    from tcdoctor.experiments.specs import StanceFix
    from tcdoctor.options import Options
    from tcdoctor.run.launcher import STANCE_PHASES, _results

    def _stance_fix(events, options):
        return stance_fix(_results(events, STANCE_PHASES), options)

    # profiler: 10 µs of a 100 µs call (10%, under the 20% rule); by removal: 30 µs of 110 µs (27%)
    ab = guard_ab.removal_cost([110 * US] * 5, [80 * US] * 5)
    by_removal = _events({"guard_overhead_s_per_call": 10 * US, "method": "p", "guard_ab": ab})
    (planned,) = _stance_fix(by_removal, Options())
    assert isinstance(planned, StanceFix)
    # not exact: the profiler's 10% stands, and no stance fix
    not_exact = {"not_exact": "several cache entries"}
    profiler = _events({"guard_overhead_s_per_call": 10 * US, "method": "p", "guard_ab": not_exact})
    assert _stance_fix(profiler, Options()) == []
    shown = guard_cost({"guard_overhead_s_per_call": 10 * US, "method": "p", "guard_ab": ab})
    assert shown["call_s"] == pytest.approx(110 * US)  # its share is of the same samples' median


def test_a_removal_figure_above_the_timing_phases_compiled_median_is_shown_as_that_median():
    """The A/B runs in the warm process, the timing in the cold one: a busier moment there could
    make the guards' cost exceed the compiled median the report shows. It never does."""
    from tcdoctor.report import phases

    ab = guard_ab.removal_cost([300 * US] * 5, [100 * US] * 5)  # 200 µs of guards
    data = {
        "guards": {"count": 10},
        "compile": {},
        "memory": {},
        "runtime": {"compiled": {"median_s": 150 * US}},
        "profile": {},
        "graph_breaks": {},
    }
    phases.BY_NAME["profile"].fill(
        data, {"guard_overhead_s_per_call": 20 * US, "method": "p", "guard_ab": ab}
    )
    phases.derive(data)
    g = data["guards"]
    assert g["overhead_source"] == GUARDS_BY_REMOVAL and g["overhead_s_per_call"] == 150 * US
    assert "above the timing phase's compiled median" in g["overhead_method"]
    assert g["call_s"] == pytest.approx(300 * US)  # the share stays of the same samples' median
