"""Issue 43, item 2: an equivalence answer the design can reach. "No difference that matters" is
two one-sided tests at RULES' equivalence_margin (±10%), never min_speedup; the sequence of
processes stops when more processes would not decide ("futile"); only the questions in play
(the verdict's until its claim is faster or slower, a gate's threshold) keep it going.

The simulation runs the launcher's own loop and the code's own decision
(benchmarks/equivalence_simulation.py, whose full table is in docs/verdict.md): processes
log-normal with 2%, 5% and 10% spread between them and 1% within, 2,000 trials per point. No
torch."""

from __future__ import annotations

import inspect
import os
import random
import sys

import pytest

from tcdoctor import units
from tcdoctor.report.model import Report
from tcdoctor.report.processes import claims, regimes, sequential
from tcdoctor.report.processes.rows import Sequence
from tcdoctor.thresholds import RULES
from tcdoctor.verdict.decision import decision
from tcdoctor.verdict.figures import Figures

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import equivalence_simulation as sim  # noqa: E402

M = RULES.min_speedup
X = 1.2  # the gate's threshold: check --min-speedup 1.2
TRIALS = 2000


def _named(*speeds: float) -> list[tuple[str, str, dict]]:
    names = ("cold", "warm", *sequential.ORDINALS)
    return [(names[i], regimes.AS_LAUNCHED, sim.timing(s)) for i, s in enumerate(speeds)]


def _rows(*speeds: float) -> list[dict]:
    return regimes.classify([regimes.row(n, e, r) for n, e, r in _named(*speeds)])


def _figures(ci: tuple[float, float], seq: dict | None = None) -> Figures:
    rep = Report.from_dict(
        {
            "runtime": {
                "eager": {"median_s": 1e-3},
                "compiled": {"median_s": 1e-3},
                "speedup": (ci[0] * ci[1]) ** 0.5,
                "speedup_ci": list(ci),
                **({"sequence": seq} if seq else {}),
            },
            "compile": {"first_call_s": 1.0},
        }
    )
    return Figures.from_report(rep)


def _launch(speeds: list[float], gate: tuple[float, ...] = ()) -> dict:
    """The launcher's loop (cap 6) over canned processes: speeds[:2] are the cold and warm ones."""
    it = iter(speeds[2:])
    first = [sim.timing(s) for s in speeds[:2]]
    return sim.canned_loop(first, lambda: sim.timing(next(it)), gate)


# -- the rule, with literal figures ---------------------------------------------------------------


def test_the_margin_is_a_rule_and_the_report_layer_uses_the_same_figure():
    assert RULES.equivalence_margin == 1.10
    for fn in (claims.claim, claims.equivalent, claims.overall_claim, sequential.decided):
        # the report layer's default margin is the rule's own value, not a second literal
        assert inspect.signature(fn).parameters["margin"].default is RULES.equivalence_margin


def test_the_band_is_the_margin_never_min_speedup():
    # within ±10%: the same, whatever min_speedup is
    assert claims.claim([0.93, 1.08], M) == "same"
    assert claims.claim([0.93, 1.08], 1.5) == "same"
    # min_speedup 1.5 used to call 1.3× "the same" (within [1/1.5, 1.5]): it is faster than eager
    # by a difference that matters, below the bar: decided, and not "the same"
    assert claims.claim([1.25, 1.35], 1.5) == "below"
    d, reasons = decision(_figures((1.25, 1.35)), RULES.replace(min_speedup=1.5))
    assert d == "dont-compile"
    assert reasons[0].startswith("Compiled is faster than eager, but not by 1.5×")
    assert "the same" not in reasons[0]
    # past the margin on one side: no equivalence, and no side either
    assert claims.claim([0.93, 1.12], M) == "undecided"
    assert claims.claim([0.90, 1.05], M) == "undecided"
    # a margin is a rule: ±5% does not hold 0.93–1.08
    assert claims.claim([0.93, 1.08], M, 1.05) == "undecided"


def test_the_same_and_no_difference_larger_than_are_worded_with_their_figures():
    d, reasons = decision(_figures((0.97, 1.06)), RULES)
    assert d == "dont-compile"
    assert reasons[0].startswith(
        "Compiled is the same speed as eager: no difference that matters (±10%)"
    )
    seq = {"cap": 6, "timed": 3, "stopped": "futile", "looks": 4, "level": sequential.look_level(6)}
    d, reasons = decision(_figures((0.93, 1.12), seq), RULES)
    assert d == "cant-tell"
    assert "can't tell at this precision, no difference larger than 0.93–1.12×" in reasons[0]
    assert "3 process(es) timed: stopped: more processes would not decide (cap 6" in reasons[0]
    # an interval that holds 1 says nothing of a side; one that does not, says no such thing
    assert claims.no_difference_text([1.01, 1.15]) == ""


# -- the loop: futility, and only the questions in play ------------------------------------------


def test_the_sequence_stops_when_more_processes_would_not_decide():
    # 1.12, 1.00, 1.07: at the current mean (1.06) with the current spread, the interval at the
    # cap would still straddle 1.02 and reach past 1.10: stopped after the first look
    data = _launch([1.12, 1.0, 1.07, 0.97, 1.13, 0.99])
    assert data["sequence"]["stopped"] == "futile" and data["sequence"]["timed"] == 3
    out = claims.combine(_named(1.12, 1.0, 1.07), data["sequence"])
    assert "stopped: more processes would not decide" in out["across_method"]
    assert units.stopped(Sequence.of(data["sequence"])).startswith(
        "3 process(es) timed: stopped: more"
    )
    # processes closer together around 1.08: the interval at the cap could clear 1.02, so more
    assert (
        sequential.progress(_rows(1.08, 1.05, 1.11), (), M, sequential.look_level(6), 6) == "more"
    )
    # at the cap nothing is futile: the cap stops it
    six = _rows(1.12, 1.0, 1.07, 0.97, 1.13, 0.99)
    assert sequential.progress(six, (), M, sequential.look_level(6), 6) == "more"


def test_a_gate_answered_at_the_first_look_ends_the_gates_part():
    # the gate at 1.2× is answered (passed) at the first look, and so is the verdict (faster)
    data = _launch([1.50, 1.52, 1.49, 1.51, 1.5, 1.5], gate=(X,))
    assert data["sequence"]["stopped"] == "decided" and data["sequence"]["timed"] == 3
    # failed at the first look (upper bound below 1.2×); the verdict's "the same" is answered and
    # its other questions are out of reach: no process runs for them
    data = _launch([1.0, 1.01, 0.99, 1.0, 1.0, 1.0], gate=(X,))
    assert data["sequence"]["stopped"] == "decided" and data["sequence"]["timed"] == 3
    # a "same" headline that may still sharpen into "faster" keeps going: at the cap, at this
    # mean and spread, the interval would clear min_speedup
    level = sequential.look_level(6)
    seq = {"cap": 6, "looks": 4, "level": level}
    assert claims.claim(claims.combine(_named(1.03, 1.04, 1.05), seq)["speedup_ci"], M) == "same"
    assert sequential.progress(_rows(1.03, 1.04, 1.05), (), M, level, 6) == "more"


# -- the decision simulation ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def table() -> dict:
    rng = random.Random(43)
    gate = {(s, f): sim.gate_point(f, s, X, TRIALS, rng) for s in sim.SPREADS for f in sim.FACTORS}
    equal = {s: sim.equal_point(s, TRIALS, rng) for s in (0.02, 0.05)}
    at_margin = {
        s: sim.equal_point(s, TRIALS, rng, true=RULES.equivalence_margin) for s in sim.SPREADS
    }
    return {"gate": gate, "equal": equal, "margin": at_margin}


def test_two_identical_runs_rarely_disagree_pass_against_fail(table):
    for (s, f), p in table["gate"].items():
        print(f"spread {s:.0%}, {f:g}X: {p}")
        assert 2 * p["pass"] * p["fail"] <= 0.01, (s, f, p)


def test_the_gate_errs_at_most_5_percent_with_the_speedup_on_its_threshold(table):
    for s in sim.SPREADS:
        p = table["gate"][(s, 1.0)]
        assert p["pass"] + p["fail"] <= 0.05, (s, p)
    # and it has power: a clear margin passes, a clear shortfall fails (at 2% spread)
    assert table["gate"][(0.02, 1.2)]["pass"] >= 0.95
    assert table["gate"][(0.02, 0.9)]["fail"] >= 0.95


def test_a_truly_equal_model_ends_the_same_or_cant_tell_within_four_and_a_half_processes(table):
    p = table["equal"][0.05]
    print(f"equal model, 5% spread: {p}")
    assert p["same"] + p["undecided"] >= 0.95  # a side claimed only at the design's error
    assert p["processes"] <= 4.5
    assert table["equal"][0.02]["same"] >= 0.5


def test_the_same_is_rarely_claimed_when_the_difference_is_the_margin(table):
    # true speedup exactly 1.10: "no difference that matters" would be wrong (TOST's error)
    for s, p in table["margin"].items():
        assert p["same"] <= 0.05, (s, p)
