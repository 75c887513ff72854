"""A disturbed process is caught (issue 34, item 4): probes/load.py reads how much of the machine other
processes took during a window, and the timing probe reruns the pairs whose rounds ran under load.

Cheap: plain Python callables, no Inductor, one process (plus busy children where a test needs load).
The machine may be shared, so a test that needs a quiet machine measures its own quiet baseline and
skips, with the figure, when it is not quiet.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest

from tcdoctor.probes import load, timing

BUSY = [sys.executable, "-c", "while True: pass"]
needs_proc = pytest.mark.skipif(
    load.snapshot() is None, reason=f"load not measurable here: {load.why_not()}"
)


@contextmanager
def busy(n: int):
    """`n` child processes spinning on the CPU (pinned nowhere) while the block runs."""
    procs = [subprocess.Popen(BUSY) for _ in range(n)]
    try:
        time.sleep(0.15)  # past the interpreter's start
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def window(seconds: float) -> load.Window:
    before = load.snapshot()
    time.sleep(seconds)
    return load.snapshot().since(before)


@pytest.mark.timing
@needs_proc
def test_snapshot_is_cheap_and_own_cpu_is_not_counted_as_others():
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        load.snapshot()
    per_read = (time.perf_counter() - t0) / n
    assert per_read < 100e-6, f"{per_read * 1e6:.1f} µs a snapshot"
    # this process spinning: its own CPU time is subtracted, so others stay near what they were
    quiet = window(0.3).other_cores
    before = load.snapshot()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.3:
        pass
    w = load.snapshot().since(before)
    assert w.wall_s >= 0.3 and w.involuntary >= 0
    assert w.other_cores < quiet + 0.5, (w, quiet)


@pytest.mark.timing
@needs_proc
def test_busy_children_read_as_other_cores_well_above_the_quiet_figure():
    quiet = window(0.5).other_cores
    cores = os.cpu_count() or 1
    if quiet > max(0.5, cores - 0.6):
        pytest.skip(f"the machine is not quiet: others used {quiet:.2f} of {cores} core(s)")
    with busy(2):
        loaded = window(0.5)
    assert loaded.other_cores >= 0.5, (loaded, quiet)
    assert loaded.other_cores > quiet + 0.3, (loaded, quiet)
    assert loaded.wall_s == pytest.approx(0.5, abs=0.2)


def test_a_round_is_loaded_above_half_a_core_and_never_by_tick_rounding_alone():
    tick = load.RESOLUTION_S
    # a quiet 20 ms round read one tick high (the truncation of /proc/stat, the kernel's sampling)
    # is not loaded
    assert not timing._loaded(load.Window(other_cpu_s=tick * 1.05, wall_s=0.02, involuntary=0))
    assert timing._loaded(load.Window(other_cpu_s=0.02, wall_s=0.02, involuntary=0))
    # a long round: half a core on average
    assert not timing._loaded(load.Window(other_cpu_s=0.4, wall_s=1.0, involuntary=0))
    assert timing._loaded(load.Window(other_cpu_s=0.6, wall_s=1.0, involuntary=0))
    # involuntary switches: at least LOADED_MIN_SWITCHES, and LOADED_SWITCHES_PER_S a second
    few = timing.LOADED_MIN_SWITCHES
    assert not timing._loaded(load.Window(0.0, 0.02, few))
    assert timing._loaded(load.Window(0.0, 0.02, few + 1))
    assert not timing._loaded(load.Window(0.0, 1.0, timing.LOADED_SWITCHES_PER_S))
    assert not timing._loaded(None)
    assert load.Window(-0.01, 0.02, 0).other_cores == 0.0  # tick sampling: clamped at 0


def test_a_round_is_loaded_only_when_the_others_took_cores_this_process_needed():
    """Issue 50: a quiet 16-core GPU machine was called "under load" by one core of others alone.
    The need is this process's own CPU use in the round; the others took some of it only when the
    machine had no core left idle."""
    # 16 cores, a step waiting on its GPU keeps one core busy, one core of others: 14 idle
    gpu = load.Window(other_cpu_s=0.02, wall_s=0.02, involuntary=0, own_cpu_s=0.02, cores=16)
    assert gpu.own_cores == 1.0 and gpu.idle_cores == pytest.approx(14.0)
    assert not timing._loaded(gpu)
    # 16 cores, a CPU-bound step on 16 threads pushed down to 15 by one core of others: loaded
    cpu = load.Window(0.02, 0.02, 0, own_cpu_s=0.30, cores=16)
    assert cpu.idle_cores == pytest.approx(0.0) and timing._loaded(cpu)
    # 2 cores, one busy program beside a one-thread step: the machine is full, loaded
    two = load.Window(0.02, 0.02, 0, own_cpu_s=0.02, cores=2)
    assert two.idle_cores == pytest.approx(0.0) and timing._loaded(two)
    # 2 cores, quiet: a one-thread step and a few kernel ticks
    assert not timing._loaded(load.Window(0.0004, 0.02, 0, own_cpu_s=0.02, cores=2))
    # switches mean a thread of this process was runnable and lost its core: loaded anywhere
    assert timing._loaded(load.Window(0.0, 0.02, timing.LOADED_MIN_SWITCHES + 1, 0.02, 16))


def _stat_line(busy_ticks: int, idle_ticks: int) -> str:
    """/proc/stat's first line: user nice system idle iowait irq softirq steal guest guest_nice."""
    return f"cpu  {busy_ticks} 0 0 {idle_ticks} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n"


@pytest.mark.parametrize(
    "cores, own_cores, others, loaded",
    [
        (16, 1.0, 1.0, False),  # the H100 machine: a GPU-bound step, one core of others
        (16, 15.0, 1.0, True),  # the same machine, a CPU-bound step on the cores left
        (2, 1.0, 1.0, True),  # this machine class, one busy program beside the step
        (2, 2.0, 0.0, False),  # this machine class, quiet
    ],
)
def test_the_load_rule_on_canned_proc_stat_windows(
    monkeypatch, tmp_path, cores, own_cores, others, loaded
):
    """The whole path: /proc/stat's busy ticks and getrusage's own time, read by `snapshot()`,
    judged by the timing probe's rule, on canned windows of a 16-core and a 2-core machine."""
    import resource
    import types

    hz, wall = load.TICKS_PER_S or 100, 1.0
    stat = tmp_path / "stat"
    stat.write_text(_stat_line(10_000, 90_000))
    clock = {"t": 100.0, "own": 50.0}
    monkeypatch.setattr(load, "STAT", str(stat))
    monkeypatch.setattr(load, "machine_cores", lambda: cores)
    monkeypatch.setattr(load.time, "perf_counter", lambda: clock["t"])
    monkeypatch.setattr(
        resource,
        "getrusage",
        lambda who: types.SimpleNamespace(ru_utime=clock["own"], ru_stime=0.0, ru_nivcsw=7),
    )
    load.reset()
    try:
        before = load.snapshot()
        busy = round((own_cores + others) * wall * hz)
        idle = round((cores - own_cores - others) * wall * hz)
        with open(stat, "r+") as f:  # the same file, rewritten in place, as the kernel's
            f.write(_stat_line(10_000 + busy, 90_000 + idle))
        clock["t"] += wall
        clock["own"] += own_cores * wall
        w = load.snapshot().since(before)
    finally:
        monkeypatch.undo()
        load.reset()
    assert w.other_cores == pytest.approx(others) and w.own_cores == pytest.approx(own_cores)
    assert w.idle_cores == pytest.approx(max(0.0, cores - own_cores - others))
    assert timing._loaded(w) is loaded


def _work():
    return sum(range(300))


@pytest.mark.timing
@needs_proc
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: a busy child is half of it")
def test_timing_under_a_busy_process_reports_and_reruns_loaded_pairs():
    with busy(1):
        data = timing.measure(_work, _work, lambda: None, 0.8)
    ld = data["load"]
    assert set(ld) == {
        "other_cores_median",
        "other_cores_max",
        "own_cores_median",
        "idle_cores_median",
        "cores",
        "loaded_pairs",
        "retimed_pairs",
        "involuntary_switches",
        "method",
    }, ld
    assert ld["other_cores_max"] >= 0.5, ld
    # a busy program beside a one-core step on this machine: it took what the step needed
    assert ld["cores"] == os.cpu_count() and ld["idle_cores_median"] < 1.0, ld
    assert ld["retimed_pairs"] > 0 and ld["loaded_pairs"] > 0, ld
    assert ld["retimed_pairs"] <= timing.MAX_RETIMES
    assert "rerun" in data["method"]
    # everything else as before
    assert data["samples"] == len(data["raw"]["eager_s"]) == len(data["raw"]["compiled_s"])
    assert data["speedup"] > 0 and data["stopped"] == "budget"


class FakeSnapshot:
    """A snapshot whose window reads loaded when the round it opened was planned loaded."""

    involuntary = 0

    def __init__(self, loaded: bool):
        self.loaded = loaded

    def since(self, earlier: FakeSnapshot) -> load.Window:
        return load.Window(0.02 if earlier.loaded else 0.0, 0.02, 0)


LOADED_S, EAGER_S, COMPILED_S = 1.0, 0.002, 0.001


def _fake_rounds(monkeypatch, plan: list[bool]) -> list[tuple[int, str]]:
    """Rounds read loaded in the order of `plan` (one flag per round run, then quiet); a loaded
    round's samples take LOADED_S. Returns (round, side) of every round run."""
    plan = list(plan)
    state = {"calls": 0, "round": -1, "loaded": False}
    sides: list[tuple[int, str]] = []

    def snapshot():
        state["calls"] += 1
        if state["calls"] % 2 == 0:  # 1: the timing's start; then (round start, round end) pairs
            state["round"] += 1
            state["loaded"] = plan.pop(0) if plan else False
        return FakeSnapshot(state["loaded"])

    def batch(fn, k, sync, faults=None, context=None):
        side = "eager" if fn is eager else "compiled"
        # a round's untimed switch sample runs before its load window opens (round not yet counted)
        if state["round"] >= 0 and (not sides or sides[-1][0] != state["round"]):
            sides.append((state["round"], side))
        if state["loaded"]:
            return LOADED_S
        return EAGER_S if side == "eager" else COMPILED_S

    def eager():
        return None

    monkeypatch.setattr(load, "snapshot", snapshot)
    monkeypatch.setattr(timing, "_batch", batch)
    monkeypatch.setattr(timing, "MIN_PAIRS", 6)
    monkeypatch.setattr(timing, "MAX_PAIRS", 6)
    return sides, eager, state


def test_loaded_pairs_are_rerun_in_the_same_order_and_replaced_up_to_the_cap(monkeypatch):
    monkeypatch.setattr(timing, "MAX_RETIMES", 3)
    plan = [True, False, False, False]  # pair 0 (eager first): eager loaded; its rerun quiet
    plan += [False, False]  # pair 1 (compiled first): quiet
    plan += [False, True, True, True, False, False]  # pair 2: loaded, loaded again, then quiet
    plan += [False, True]  # pair 3 (compiled first): eager loaded, no reruns left: kept
    sides, eager, _ = _fake_rounds(monkeypatch, plan)
    data = timing.measure(eager, lambda: None, lambda: None, 5.0)
    ld = data["load"]
    assert ld["retimed_pairs"] == 3 and ld["loaded_pairs"] == 1, ld
    assert data["raw"]["eager_s"] == [EAGER_S] * 3 + [LOADED_S] + [EAGER_S] * 2
    assert data["raw"]["compiled_s"] == [COMPILED_S] * 6
    assert data["samples"] == 6
    assert ld["other_cores_max"] == 1.0 and ld["other_cores_median"] == 0.0
    order = [side for _, side in sides]
    e, c = "eager", "compiled"
    assert order == [e, c, e, c, c, e, e, c, e, c, e, c, c, e, e, c, c, e], order


def test_reruns_stay_within_their_share_of_the_budget(monkeypatch):
    monkeypatch.setattr(timing, "RETIME_SHARE", 0.0)
    sides, eager, _ = _fake_rounds(monkeypatch, [True] * 12)
    data = timing.measure(eager, lambda: None, lambda: None, 5.0)
    assert data["load"]["retimed_pairs"] == 0 and data["load"]["loaded_pairs"] == 6
    assert len(sides) == 12


def test_a_tick_over_a_short_round_is_never_more_cores_than_the_machine_has():
    # one 10 ms tick of others' CPU inside a 1.6 ms round read 6.1 cores on this 2-core machine
    w = load.Window(other_cpu_s=0.010, wall_s=0.0016, involuntary=0)
    assert w.other_cores == os.cpu_count()
    assert load.Window(other_cpu_s=-0.001, wall_s=0.01, involuntary=0).other_cores == 0.0
    assert load.Window(other_cpu_s=0.005, wall_s=0.01, involuntary=0).other_cores == 0.5


def test_a_side_far_slower_than_the_other_keeps_each_pair_short():
    """k and r are set by the faster side; the slower side's round is capped at MAX_ROUND_S (before,
    a 20 µs eager against a 21 ms compiled call made 100-call samples: 139 s of timing for a
    0.2 s budget). Sides within 10× of each other keep the faster side's k and r."""
    assert timing.sample_sizes(20e-6, 21e-3) == (9, 1)  # a round of 189 ms, not 21 s
    assert timing.sample_sizes(20e-6, 60e-6) == timing.sample_sizes(20e-6, 20e-6) == (100, 10)
    for fast, slow in ((1e-7, 5e-3), (20e-6, 21e-3), (1e-3, 0.5), (2e-3, 9e-3)):
        k, r = timing.sample_sizes(fast, slow)
        assert k >= 1 and r >= 1 and k * r * slow <= max(timing.MAX_ROUND_S, slow)
    t0 = time.perf_counter()
    data = timing.measure(lambda: None, lambda: time.sleep(0.005), lambda: None, 0.2)
    assert data["samples"] >= timing.MIN_PAIRS
    assert time.perf_counter() - t0 < 15  # ~10 pairs of rounds ≤ 0.2 s each; before: hours


def test_distributed_ranks_rerun_when_any_rank_is_loaded(monkeypatch):
    """Every rerun decision goes through AGREE with "any": a rank that saw no load reruns too."""
    decisions = []

    def agree(value, how):
        # during timing (the warm-up agrees with "any" too), the first two rerun decisions
        if how == "any" and state["round"] >= 0 and len(decisions) < 2:
            decisions.append(value)
            return True  # another rank was loaded
        return value

    sides, eager, state = _fake_rounds(monkeypatch, [])
    monkeypatch.setattr(timing, "AGREE", agree)
    data = timing.measure(eager, lambda: None, lambda: None, 5.0)
    assert decisions == [False, False]  # this rank's own rounds were quiet
    assert data["load"]["retimed_pairs"] == 2 and data["load"]["loaded_pairs"] == 0
    assert len(sides) == 2 * (6 + 2)


def test_load_not_measured_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(load, "STAT", str(tmp_path / "no-such-stat"))
    load.reset()
    try:
        assert load.snapshot() is None and "not readable" in load.why_not()
        data = timing.measure(_work, _work, lambda: None, 0.05)
        assert list(data["load"]) == ["not_measured"]
        assert "load not measured" in data["method"]
    finally:
        monkeypatch.undo()
        load.reset()
    assert load.snapshot() is not None or sys.platform != "linux"
