"""The headline speedup across processes (report/runtime_processes.py, stats.hierarchical_ratio_ci),
allocator regimes, the least favourable process for the break-even, fixes judged against the
main row of their own process, and shape settings judged as trades. Literal figures, no torch."""

from __future__ import annotations

import random
import statistics

import pytest

from tcdoctor import stats
from tcdoctor.experiments.fixes import judged_across_processes, judged_in_process
from tcdoctor.experiments.specs import ConfigFix
from tcdoctor.report import runtime_processes as rp
from tcdoctor.report.model import Report
from tcdoctor.report.sections import StrategyRow
from tcdoctor.verdict.figures import Figures
from tcdoctor.verdict.recommend import main_shape_row, trade
from tcdoctor.verdict.rules import RULES


def _timing(speedup: float, n: int = 60, noise: float = 0.01, seed: int = 0, faults=(0.0, 0.0)):
    """One process's timing result as probes/timing.measure returns it: eager 1 ms, compiled
    1/speedup ms, each round with relative noise."""
    rng = random.Random(seed)
    e = [1e-3 * (1 + rng.gauss(0, noise)) for _ in range(n)]
    c = [1e-3 / speedup * (1 + rng.gauss(0, noise)) for _ in range(n)]
    lo, hi = stats.ratio_of_medians_ci(e, c)
    return {
        "eager": {"median_s": statistics.median(e), "minor_faults_per_call": faults[0]},
        "compiled": {"median_s": statistics.median(c), "minor_faults_per_call": faults[1]},
        "speedup": statistics.median(e) / statistics.median(c),
        "speedup_ci": [lo, hi],
        "samples": n,
        "raw": {"eager_s": e, "compiled_s": c},
    }


def test_one_process_is_that_process_paired_interval():
    t = _timing(1.5)
    est, lo, hi = stats.hierarchical_ratio_ci([(t["raw"]["eager_s"], t["raw"]["compiled_s"])])
    assert est == pytest.approx(t["speedup"])
    assert (lo, hi) == pytest.approx(tuple(t["speedup_ci"]), rel=0.02)


def test_two_disagreeing_processes_give_an_interval_covering_both():
    a, b = _timing(1.6, seed=1), _timing(1.9, seed=2)
    out = rp.combine([("cold", "as launched", a), ("warm", "as launched", b)])
    lo, hi = out["speedup_ci"]
    # each process's own interval is a few percent wide and they do not overlap; the interval
    # across processes holds both processes' figures, the paired intervals held one each
    assert a["speedup_ci"][1] < b["speedup_ci"][0]
    assert lo <= a["speedup"] and hi >= b["speedup"]
    assert out["speedup"] == pytest.approx((a["speedup"] * b["speedup"]) ** 0.5)
    assert out["spread"] == [pytest.approx(a["speedup"]), pytest.approx(b["speedup"])]
    assert [p["process"] for p in out["processes"]] == ["cold", "warm"]
    assert "regimes" not in out and "hierarchical bootstrap" in out["ci_method"]


def test_agreeing_processes_keep_a_narrow_interval():
    a, b = _timing(1.5, seed=1), _timing(1.5, seed=2)
    lo, hi = rp.combine([("cold", "x", a), ("warm", "x", b)])["speedup_ci"]
    assert hi / lo < 1.05


def test_allocator_regimes_are_both_reported_and_the_interval_spans_them():
    faulting = _timing(3.1, seed=1, faults=(12_128.0, 0.0))
    quiet = _timing(1.6, seed=2)
    out = rp.combine([("cold", "as launched", faulting), ("warm", "as launched", quiet)])
    groups = {g["regime"]: g for g in out["regimes"]}
    assert set(groups) == {rp.FAULTING, rp.NOT_FAULTING}
    assert groups[rp.FAULTING]["processes"] == ["cold"]
    assert groups[rp.FAULTING]["eager_faults_per_call"] == 12_128.0
    lo, hi = out["speedup_ci"]
    assert lo <= quiet["speedup_ci"][0] and hi >= faulting["speedup_ci"][1]
    assert "allocator regimes" in out["across_method"]


@pytest.mark.parametrize(
    "results, expect",
    [
        ([_timing(1.5, seed=1), _timing(1.5, seed=1)], None),
        ([_timing(1.5, seed=1), _timing(1.9, seed=2)], False),  # intervals apart: a plain third
        (
            [_timing(3.0, seed=1, faults=(9000, 0)), _timing(3.0, seed=2, faults=(9000, 0))],
            True,  # both fault: the third pins glibc's thresholds to show the other regime
        ),
        # one process faulted, one did not: both regimes seen, and their figures agree
        ([_timing(3.0, seed=1, faults=(9000, 0)), _timing(3.0, seed=1)], None),
        ([_timing(1.5, seed=1)], None),
    ],
)
def test_when_a_third_process_is_timed(results, expect):
    need = rp.third_process(results)
    assert (need[1] if need else None) == expect


def _report(processes: list[dict]) -> Report:
    return Report.from_dict(
        {
            "runtime": {
                "eager": {"median_s": 1e-3},
                "compiled": {"median_s": 0.3e-3},
                "speedup": 2.2,
                "speedup_ci": [1.5, 3.3],
                "processes": processes,
            },
            "compile": {"first_call_s": 10.0},
        }
    )


def test_break_even_uses_the_least_favourable_process():
    rows = [
        {"process": "cold", "speedup": 3.3, "eager_median_s": 1e-3, "compiled_median_s": 0.3e-3},
        {
            "process": "warm",
            "speedup": 1.6,
            "eager_median_s": 0.5e-3,
            "compiled_median_s": 0.3125e-3,
        },
    ]
    fig = Figures.from_report(_report(rows))
    assert (fig.eager_s, fig.compiled_s) == (0.5e-3, 0.3125e-3)
    # (10 s − 0.5 ms eager call) / 0.1875 ms saved per call, not / 0.7 ms from the luckier process
    assert fig.break_even_cold["calls"] == pytest.approx((10.0 - 0.5e-3) / 0.1875e-3, rel=1e-3)


def test_regimes_are_named_wherever_the_speed_is():
    rep = _report([])
    rep.runtime.regimes = [
        {"regime": rp.FAULTING, "processes": ["cold"], "speedup": 3.1, "speedup_ci": [3.0, 3.2]},
        {
            "regime": rp.NOT_FAULTING,
            "processes": ["warm"],
            "speedup": 1.6,
            "speedup_ci": [1.5, 1.7],
        },
    ]
    text = Figures.from_report(rep).faster_text
    assert "depending on the allocator" in text and "3.10×" in text and "1.60×" in text


def test_a_fix_in_the_warm_process_is_judged_against_that_process_row():
    spec = ConfigFix("allow_rnn", before={"speedup": 0.81, "speedup_ci": [0.80, 0.82]})
    judged_in_process(spec, _timing(0.9, seed=3))
    assert spec.before["speedup"] == pytest.approx(0.9, rel=0.02)
    assert "same process" in spec.before["timed_in"]
    across = {"speedup": 0.85, "speedup_ci": [0.78, 0.93]}
    other = judged_across_processes(ConfigFix("x", before={"speedup": 0.81}), across)
    assert other.before["speedup_ci"] == [0.78, 0.93]


def _shape_row(name: str, compile_s: float, medians_us: list[float], source=None) -> StrategyRow:
    return StrategyRow.from_dict(
        {
            "name": name,
            "source": source,
            "compiles": 1,
            "recompiles": 0,
            "compile_s": compile_s,
            "limit_hit": False,
            "shapes": [{"median_s": m * 1e-6, "speedup": 1.0} for m in medians_us],
        }
    )


def test_a_setting_that_compiles_less_but_runs_slower_is_not_a_win_within_the_spread():
    # the RoPE case: marked compiled once in 19.8 s but runs each shape 20–60% slower than the
    # automatic row, compiled in 28.1 s in another process
    auto = _shape_row("automatic", 28.11, [104, 86, 104, 128], source="main analysis")
    marked = _shape_row("marked", 19.77, [170, 140, 202, 227])
    wins, text = trade(marked, auto, dict(RULES))
    assert not wins and "per call vs eager" in text
    # a setting that saves far more compile time than the spread, at the same speed, wins
    cheap = _shape_row("dynamic", 5.0, [104, 86, 104, 128])
    assert trade(cheap, auto, dict(RULES))[0]
    assert main_shape_row([marked, auto]) is auto
