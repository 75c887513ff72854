"""The decision rules the sections' derived figures apply: what "significantly faster" and "slower"
mean, the cold/warm ratio, the guard share of a call, break-even. The thresholds they are applied
with are the verdict's (tcdoctor/thresholds.py, `Rules`); the rules themselves live below the
verdict, in report/, because the sections' properties (`Runtime.significantly_faster`,
`Guards.overhead_fraction`, `StrategyRow.steps_to_repay`, ...) apply them and report/ imports
nothing above it. The verdict, the renderers and the launcher call the same functions.

Pitfall: each takes figures that may be missing (None) and answers "no claim" (False or None)
then, never a guess.

A row measured in one process (a tried fix, a mode, a training way, a region, a compile-time
remedy) is judged on its **decision interval** (`row_decision_interval`), never on its own paired
interval: one process's interval leaves out the spread between processes (5–17% on the models
measured), so a fix with no effect cleared a 95% one-process interval about one time in five. The
method and its pitfalls are in the function's docstring and docs/verdict.md.
"""

from __future__ import annotations

import math
from typing import Sequence

from .. import stats, units


def faster_than_eager(ci_low: float | None, min_speedup: float) -> bool:
    """The one test of "at least this fast": the 95% CI's lower bound at or above `min_speedup`.

    Used for every strategy and fix row, `check --min-speedup`, and (through
    processes.claims.claim, the same comparison) the main analysis.
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


# -- a row measured in one process, judged with the spread between processes ---------------------

# The chance that a row with no effect earns a claim, over all the candidate rows of one decision
# (Bonferroni: each row's interval at 1 − FAMILY_ALPHA / candidates, two-sided).
FAMILY_ALPHA = 0.05
# Stands in for the spread between processes where the headline timed a single process (none
# measured): the largest log-scale SD of one script's speedup between fresh processes the statistics
# review of issue 42 measured (5–17%), taken as known (the normal quantile).
ASSUMED_PROCESS_SD = 0.17
# The spread is taken as measured from this many degrees of freedom (three processes, the headline's
# first look); with fewer, t(1) = 12.7 swings with whether two processes happened to agree.
MIN_SPREAD_DF = 2
ACROSS_WORDS = "with the spread between processes"


def row_decision_interval(
    speedup: float | None,
    own_ci: Sequence[float] | None,
    spread: tuple[float, int] | None,
    candidates: int,
    processes: int = 0,
) -> tuple[list[float] | None, str]:
    """(decision interval, how it was made) of a speedup measured in one process.

    Method, on the log scale: log speedup ± q · √(w² + b²), where w is the row's own paired noise
    (its 95% bootstrap interval's half-width / 1.96) and b the spread between processes: the SD of
    the headline's processes' log speedups (`spread` = (sd, df) from stats.pooled_log_sd, pooled
    within allocator regimes where there are two), never less than w. q is Student's t with the
    spread's degrees of freedom (n − 1 for n processes; N − k across k regimes); the row's own noise
    is taken as known (hundreds of pairs), so Satterthwaite's degrees of freedom would be a little
    higher: df = n − 1 errs on the wide side. The level is 1 − FAMILY_ALPHA / `candidates`
    (Bonferroni over the rows that could each earn the same claim), two-sided, so the chance that
    any row with no effect is called faster stays at most 2.5% (5% counting "slower" too).
    The interval is widened to hold the row's own interval (a bootstrap interval can be skewed).

    Pitfalls. The headline's processes already carry their own within-process noise, so adding w
    counts it twice: a little wide, on purpose. With `spread` None (the headline timed one process,
    or one per allocator regime) no spread was measured: ASSUMED_PROCESS_SD stands in, with the
    normal quantile, and the method says so. So it does with two processes (or three in two
    regimes): one degree of freedom, t(1) = 12.7, would make the interval swing with whether two
    processes happened to agree (narrower than the assumed spread when they did); the spread they
    showed counts where it is larger.
    """
    if speedup is None or speedup <= 0:
        return None, "not judged: the row has no speedup"
    k = max(1, candidates)
    level = 1 - FAMILY_ALPHA / k
    own = stats.log_sd_of_ci(own_ci)
    if spread is not None and spread[1] >= MIN_SPREAD_DF:
        sd, df = spread
        between = max(sd, own)
        q = stats.t_quantile(1 - (1 - level) / 2, df)
        where = (
            f"the SD of the log speedups of the headline's {processes or df + 1} processes "
            f"({df} degree(s) of freedom, Student's t), never less than the row's own noise"
        )
    else:
        seen = spread[0] if spread is not None else 0.0
        between = max(ASSUMED_PROCESS_SD, seen, own)
        q = stats.normal_quantile(1 - (1 - level) / 2)
        why = (
            "the headline timed one process, so no spread between processes was measured"
            if spread is None
            else f"the headline's processes know the spread to {spread[1]} degree of freedom "
            f"(they showed {units.percent(seen, 1)})"
        )
        where = (
            f"assumed: {why}; {units.percent(ASSUMED_PROCESS_SD)}, the largest measured, stands "
            "in for it where larger (normal quantile)"
        )
    half = q * math.sqrt(own**2 + between**2)
    lo, hi = speedup * math.exp(-half), speedup * math.exp(half)
    if own_ci and own_ci[0] is not None and own_ci[1] is not None:
        lo, hi = min(lo, own_ci[0]), max(hi, own_ci[1])
    family = f"Bonferroni: 95% over {k} candidate rows" if k > 1 else "one candidate row"
    method = (
        f"{level * 100:.3g}% decision interval ({family}), log scale: log speedup ± {q:.2f} × "
        f"√(own paired noise {units.percent(own, 1)}² + spread between processes "
        f"{units.percent(between, 1)}²); the spread is {where}; the row's own 95% CI, from one "
        "process, is kept as measured"
    )
    return [lo, hi], method


def row_interval(
    own_ci: Sequence[float] | None,
    decision_ci: Sequence[float] | None,
    decision_method: str | None,
) -> Sequence[float] | None:
    """The interval every claim about a row rests on: its decision interval where the report made
    one (`decision_method` set; a None interval then means no claim), else its own interval: a
    row of a report saved before the decision interval existed, or built by hand with literal
    figures, is judged as it was."""
    return decision_ci if decision_method is not None else own_ci
