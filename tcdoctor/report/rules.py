"""The decision rules the sections' derived figures apply: what "significantly faster" and "slower"
mean, the cold/warm ratio, the guard share of a call, break-even. The thresholds they are applied
with are the verdict's (tcdoctor/verdict/thresholds.py, RULES); the rules themselves live below the
verdict, in report/, because the sections' properties (`Runtime.significantly_faster`,
`Guards.overhead_fraction`, `StrategyRow.steps_to_repay`, ...) apply them and report/ imports
nothing above it. The verdict, the renderers and the launcher call the same functions.

Pitfall: each takes figures that may be missing (None) and answers "no claim" (False or None)
then, never a guess.
"""

from __future__ import annotations

import math


def faster_than_eager(ci_low: float | None, min_speedup: float) -> bool:
    """The one test of "at least this fast": the 95% CI's lower bound at or above `min_speedup`.

    Used for every strategy and fix row, `check --min-speedup`, and (through
    runtime_processes.claim, the same comparison) the main analysis.
    """
    return ci_low is not None and ci_low >= min_speedup


def cold_warm_ratio(cold_s: float | None, warm_s: float | None) -> float | None:
    """How many times the cold-cache first call is the warm-cache one."""
    return cold_s / warm_s if cold_s and warm_s and warm_s > 0 else None


def guard_share(overhead_s: float | None, call_s: float | None) -> float | None:
    """Guard evaluation per call ÷ the compiled call's median (the timing phase's)."""
    return overhead_s / call_s if overhead_s is not None and call_s else None


def slower_than_eager(ci_high: float | None) -> bool:
    """The 95% CI's upper bound below 1: eager is faster (the main analysis and every row)."""
    return ci_high is not None and ci_high < 1.0


def break_even(
    compile_s: float | None, eager_s: float | None, compiled_s: float | None
) -> dict | None:
    """Calls after which (compile time − one eager call) is repaid by the per-call saving."""
    if compile_s is None or not eager_s or not compiled_s or compiled_s >= eager_s:
        return None
    saving = eager_s - compiled_s
    calls = max(1, math.ceil(max(0.0, compile_s - eager_s) / saving))
    return {"calls": calls, "wall_s": calls * compiled_s + compile_s, "saving_per_call_s": saving}
