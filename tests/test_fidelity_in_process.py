"""tcdoctor's paired timing equals PyTorch's `blocked_autorange` within ±5%, in one process
(issue 43 item 9): the equivalence test of benchmarks/fidelity_in_process.py (its docstring has
the method: blocks of blocked_autorange, tcdoctor, blocked_autorange; a 90% interval of the
typical per-side ratio inside [1/1.05, 1.05], i.e. two one-sided 5% tests), on a small conv net
compiled with aot_eager, one thread.

Its power, measured by that script with a bias planted in tcdoctor's timed sample (a test-only
replacement of probes/timing._batch, nothing in the shipped path). On the small conv net, 30 trials
on a shared 2-core host: a 10% bias failed one comparison 27 of 27 times (every sample, or the
compiled side's only), no bias 2 of 28 under the earlier two-answer rule (docs/measuring.md). On
the training step (2026-11-27), one comparison with no bias failed 2 of 5 under that rule, its
interval's edge at the margin; the rule is now three answers (benchmarks/fidelity_in_process.decide:
pass, fail = an interval wholly outside ±5%, too noisy) with a second look on both comparisons'
blocks pooled. `--model M --plants none,compiled --confirm --trials 3` on a noisy evening
(2026-11-28): training step, no bias 1 passed, 2 too noisy, none failed; 10% bias 3 of 3 failed;
small conv net, no bias 3 too noisy, none failed; 10% bias 3 of 3 failed (a skip is this host's
honest answer on such an evening; earlier that evening no bias passed 5 of 5 on the training step).
A block that did not run quiet (other programs above half a core, by
tcdoctor's own round rule, or a pair tcdoctor itself saw loaded and reran: under load tcdoctor
keeps its quieter rounds and blocked_autorange every block, so they differ by design) is dropped
and another runs; when too few quiet blocks fit the time limit the test is skipped with what it
saw (outside load can leave it without an answer, never pass or fail it).
"""

from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import fidelity_in_process as fip  # noqa: E402


@pytest.mark.timing
@pytest.mark.parametrize("model", fip.TESTED)
def test_tcdoctor_timing_equals_blocked_autorange_within_5_percent(model):
    """A comparison that does not pass is followed by a second, and both comparisons' blocks decide
    together (24 blocks narrow the interval by ~√2): the test fails only when a difference beyond
    ±5% is shown on them, and is skipped, with its figures, when neither equivalence nor a
    difference is ("too noisy" on this host). ~15 s a model; ~30 s when the first look decides
    nothing.

    Two models (issue 50): the small conv net and a whole training step (SGD). ResNet-18 compiled
    with Inductor is the benchmark's third (`--model resnet18`): its rounds read the switch from
    the other side before the untimed switch sample (0.89-0.97× against 0.76-0.85×), and
    `--plants old-rounds` fails 4 of 4 trials there; but its compiled call page-faults ~5,000
    times a call, and one comparison with no bias failed 1 of 4 trials, two in a row once in a
    quiet suite run: too close to the margin for a test that must not fail by chance."""
    import torch

    eager, compiled = fip.callables(model=model)
    with torch.no_grad():
        answer, sides, comp = fip.two_looks(eager, compiled, fip.MODEL_BLOCKS[model])
    if answer == "can't tell":
        pytest.skip(
            f"machine too busy: {comp.dropped} block(s) not quiet (other programs up to "
            f"{comp.most_others:.2f} cores, or tcdoctor saw loaded pairs); "
            f"{len(comp.ratios['eager'])} quiet of the {fip.MIN_BLOCKS} needed"
        )
    if answer == "pass":
        return
    # each side: (typical tcdoctor / blocked_autorange, 90% low, high), on both looks' blocks
    assert answer != "fail", (
        f"a difference beyond ±5% shown on {len(comp.ratios['eager'])} blocks: {sides}"
    )
    pytest.skip(f"too noisy to show ±5% or a difference on two looks' blocks: {sides}")


def test_equivalence_rejects_a_10_percent_offset_and_accepts_none():
    """The decision itself, on fixed ratios (no timing): 1% block-to-block noise around 1.00
    passes, the same noise around 1.10 fails (on either side), and a 1.00 centre with 12 times that
    noise (its 90% interval, 0.92-1.08) shows neither: "too noisy", never a pass."""
    noise = [0.99, 1.01, 1.0, 0.985, 1.015, 1.005, 0.995, 1.0]
    assert fip.equivalent(noise)[0]
    assert not fip.equivalent([1.10 * r for r in noise])[0]
    assert not fip.equivalent([1 + 12 * (r - 1) for r in noise])[0]
    biased = [1.10 * r for r in noise]
    assert fip.decide({"eager": noise, "compiled": noise})[0] == "pass"
    assert fip.decide({"eager": noise, "compiled": biased})[0] == "fail"
    assert fip.decide({"eager": [r / 1.10 for r in noise], "compiled": noise})[0] == "fail"
    wide = [1 + 12 * (r - 1) for r in noise]
    assert fip.decide({"eager": noise, "compiled": wide})[0] == "too noisy"
    # outside the margin but its interval holds 1: not shown to differ
    assert fip.decide({"eager": noise, "compiled": [1.06 * r for r in wide]})[0] == "too noisy"


def test_planted_bias_is_test_only_and_undone():
    """The hook replaces the timed sample only inside its `with`, scales what it returns, and
    leaves the shipped function in place after."""
    from tcdoctor.probes import timing

    shipped = timing._batch
    calls: list[float] = []

    def fn() -> None:
        calls.append(1.0)

    with fip.planted(1.10, "both", fn):
        assert timing._batch is not shipped
        t = timing._batch(fn, 3, lambda: None)
    assert timing._batch is shipped and len(calls) == 3 and t > 0
    with fip.planted(1.10, "none", fn):
        assert timing._batch is shipped
