"""Issue 43 item 2's decision simulation, through the launcher's own loop and the code's own
decision: for true speedups at 0.9, 0.95, 1.0, 1.05, 1.1 and 1.2 times a gate's threshold X
(`check --min-speedup X`), how often the gate passes (lower bound ≥ X), fails (upper bound < X) or
is inconclusive, and how many processes the loop timed; and for a truly equal model without a gate
how the verdict ends ("no difference that matters", can't tell, faster, slower) and after how many
processes.

Processes are log-normal around the true speedup with `spread` between them and 1% within (each
process's own paired 95% interval ±1.96%). The loop is experiments/plan.py's `time_processes` (the
launcher's) with each timing-only child replaced by a draw (cap 6, as `--processes 6`); the decision interval is
processes.claims.combine's; the claim is the report's (`Runtime.claim`). No torch.

Usage: python benchmarks/equivalence_simulation.py [--trials 2000] [--gate 1.2]
(tests/test_equivalence.py runs the same functions with fewer trials and asserts on them.)
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

from tcdoctor.checks.questions import Questions
from tcdoctor.experiments import plan
from tcdoctor.options import Options
from tcdoctor.report.model import Report
from tcdoctor.report.processes import claims, regimes, sequential
from tcdoctor.thresholds import RULES

CAP, WITHIN = 6, 0.01
SPREADS = (0.02, 0.05, 0.10)
FACTORS = (0.9, 0.95, 1.0, 1.05, 1.1, 1.2)


def timing(s: float, samples: int | None = 200) -> dict:
    """One process's timing as probes/timing.py reports it (its own 95% interval: 1% within),
    from `samples` pairs (None: not said, so the noise floor takes its t quantile)."""
    half = 1.96 * WITHIN
    return {
        "eager": {"median_s": 1e-3},
        "compiled": {"median_s": 1e-3 / s},
        "speedup": s,
        "speedup_ci": [s * math.exp(-half), s * math.exp(half)],
        **({"samples": samples} if samples is not None else {}),
    }


def canned_loop(first: list[dict], draw, gate: tuple[float, ...] = ()) -> dict:
    """The launcher's loop (plan.time_processes, cap CAP) after the cold and warm processes
    `first`, each timing-only child replaced by `draw()`; `gate`: check's --min-speedup."""

    def time_one(i: int, why: str, pinned: bool) -> tuple[bool, dict]:
        return True, dict(draw(), process=sequential.extra_name(i), why=why)

    first_by_phase = dict(zip(("runtime", "runtime_warm"), first))
    options = Options(processes=CAP)
    data = plan.time_processes(first_by_phase, options, RULES, time_one, Questions(speedups=gate))
    assert data is not None
    return data


def run_once(true: float, spread: float, gate: tuple[float, ...], rng: random.Random) -> dict:
    """One analysis: the cold and warm processes, then the launcher's loop; its decision interval,
    the verdict's claim, the gate's outcome (when a gate is given) and the processes timed."""

    def draw() -> dict:
        return timing(true * math.exp(rng.gauss(0, spread) + rng.gauss(0, WITHIN)))

    first = [draw(), draw()]
    data = canned_loop(first, draw, gate)
    named = [("cold", regimes.AS_LAUNCHED, first[0]), ("warm", regimes.AS_LAUNCHED, first[1])]
    named += [(p["process"], regimes.AS_LAUNCHED, p) for p in data["processes"]]
    out = claims.combine(named, data["sequence"])
    rep = Report.from_dict(
        {"runtime": {"eager": {"median_s": 1e-3}, "compiled": {"median_s": 1e-3}, **out}}
    )
    lo, hi = out["speedup_ci"]
    result = {
        "claim": rep.runtime.claim(RULES),
        "timed": data["sequence"]["timed"],
        "stopped": data["sequence"]["stopped"],
    }
    if gate:
        x = gate[0]
        result["gate"] = "pass" if lo >= x else "fail" if hi < x else "inconclusive"
    return result


def gate_point(
    factor: float, spread: float, x: float, trials: int, rng: random.Random
) -> dict[str, float]:
    """P(pass), P(fail), P(inconclusive) and mean processes at a true speedup of factor × x."""
    runs = [run_once(factor * x, spread, (x,), rng) for _ in range(trials)]
    share = {
        k: sum(r["gate"] == k for r in runs) / trials for k in ("pass", "fail", "inconclusive")
    }
    return {**share, "processes": statistics.fmean(r["timed"] for r in runs)}


def equal_point(spread: float, trials: int, rng: random.Random, true: float = 1.0) -> dict:
    """A model at `true` (1.0: truly equal) without a gate: how the verdict's claim ends (same,
    undecided, faster, slower), the share stopped as futile, and mean processes."""
    runs = [run_once(true, spread, (), rng) for _ in range(trials)]
    share = {
        k: sum(r["claim"] == k for r in runs) / trials
        for k in ("same", "undecided", "faster", "slower", "below")
    }
    return {
        **share,
        "futile": sum(r["stopped"] == "futile" for r in runs) / trials,
        "cap": sum(r["stopped"] == "cap" for r in runs) / trials,
        "processes": statistics.fmean(r["timed"] for r in runs),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--gate", type=float, default=1.2)
    args = ap.parse_args()
    rng = random.Random(43)
    x, margin = args.gate, RULES.equivalence_margin
    print(
        f"cap {CAP}, level per look {sequential.look_level(CAP):.2%}, equivalence margin ±"
        f"{margin - 1:.0%}, {args.trials} trials per row; processes log-normal, 1% within\n"
    )
    print(f"gate check --min-speedup {x:g}:\n")
    print(
        "| spread | true speedup | P(pass) | P(fail) | P(inconclusive) | 2·P(pass)·P(fail) | mean processes |"
    )
    print("|---|---|---|---|---|---|---|")
    for spread in SPREADS:
        for f in FACTORS:
            p = gate_point(f, spread, x, args.trials, rng)
            print(
                f"| {spread:.0%} | {f:g} X = {f * x:.3g}× | {p['pass']:.1%} | {p['fail']:.1%} | "
                f"{p['inconclusive']:.1%} | {2 * p['pass'] * p['fail']:.2%} | {p['processes']:.2f} |"
            )
    print("\nno gate, the verdict's claim:\n")
    print(
        "| spread | true speedup | the same (±margin) | can't tell | faster | slower | stopped futile | mean processes |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for true in (1.0, margin):
        for spread in SPREADS:
            p = equal_point(spread, args.trials, rng, true)
            print(
                f"| {spread:.0%} | {true:g}× | {p['same']:.1%} | {p['undecided']:.1%} | "
                f"{p['faster']:.1%} | {p['slower']:.1%} | {p['futile']:.1%} | {p['processes']:.2f} |"
            )


if __name__ == "__main__":
    main()
