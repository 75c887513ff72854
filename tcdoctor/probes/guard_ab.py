"""Guard cost by removing the guards: compiled calls timed with and without guard evaluation.

Method. `torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)` makes Dynamo run a
frame's cache entry without evaluating its guards. Samples alternate (with, without, without,
with, ...), each `k` back-to-back calls of the compiled model under the workload's no_grad (as the
timing phase holds it), `k` sized so a sample lasts about TARGET_SAMPLE_S; after a warm-up of each
side, sampling runs for `budget_s`. The guard cost per call is median(with) - median(without), with
a 95% paired-bootstrap CI (`stats.bootstrap`, one index picks both samples of a pair), never below
0 and never above the with-guards median (a clamp, said in `clamped`). It runs in the profile phase,
after the profiler and outside every other timed figure; the profiler's `TorchDynamo Cache Lookup`
figure stays beside it as the cross-check (it reads high: the profiler's own per-event cost lands
inside the lookup it times; HF T5 tiny with kwargs: 673 µs vs 572 µs by removal).

Exactness. With one cache entry per compiled frame, skipping guards runs the very entry the guarded
call picks, so the two sides differ by guard evaluation alone. With several entries (recompiles)
the stance still evaluates the guards that tell the entries apart, so the difference is only part
of the cost: no figure then (`not_exact` says why), and the report keeps the profiler's. Entries
are read from this process's CompilationMetrics since its last `dynamo_state.fresh()`: a frame
compiled more than once ("F/C" with C > 0) or any entry with a recompile reason means several.

Pitfalls: the stance is process-global and "unsafe" (a changed input would run a wrong entry), so
it is only ever entered around these samples, with the very inputs the entry was compiled for, and
always left (a `with` block). Noise: on a busy machine the two medians move together within a pair
but not across pairs; a cost smaller than the noise can come out negative and is shown as 0.
"""

from __future__ import annotations

import re
import statistics
import time
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable

import torch

from .. import stats
from . import dynamo_state
from .timing import MAX_PAIRS, MIN_PAIRS, TARGET_SAMPLE_S  # the timing phase's sampling design

WARMUP_CALLS = 3
BUDGET_S = 1.0
_RECOMPILED = re.compile(r"(\d+)/(\d+)")

METHOD = (
    "compiled calls timed with and without guard evaluation (torch.compiler.set_stance('default', "
    "skip_guard_eval_unsafe=True) on alternate samples), one cache entry per frame; guard cost = "
    "median(with) - median(without), 95% paired-bootstrap CI, clamped to [0, median(with)]"
)


def several_entries(metrics: list) -> str | None:
    """Why the A/B is not exact here (a frame with several cache entries), or None."""
    for m in metrics:
        cid = str(getattr(m, "compile_id", "") or "")
        hit = _RECOMPILED.search(cid)
        if getattr(m, "recompile_reason", None) or (hit and int(hit.group(2)) > 0):
            name = getattr(m, "co_name", None) or "a frame"
            return (
                f"{name} has several cache entries (compile {cid or '?'} is a recompile): skipping "
                "guards still evaluates those that tell entries apart, so the A/B would show only "
                "part of the cost; the profiler's figure is shown"
            )
    return None


def removal_cost(with_s: list[float], without_s: list[float], resamples: int = 1000) -> dict:
    """Guard cost per call from paired per-call times with and without guards (seconds)."""
    n = min(len(with_s), len(without_s))
    w, wo = list(with_s[:n]), list(without_s[:n])
    med_w, med_wo = statistics.median(w), statistics.median(wo)
    raw = med_w - med_wo

    def diff(idx: list[int]) -> float:
        return statistics.median([w[i] for i in idx]) - statistics.median([wo[i] for i in idx])

    lo, hi = stats.percentile_ci(stats.bootstrap(diff, n, resamples=resamples))

    def clamp(v: float) -> float:
        return min(max(v, 0.0), med_w)

    clamped = None
    if raw < 0:
        clamped = (
            f"the difference of medians was {raw * 1e6:.1f} µs, below zero (noise larger than the "
            "guards' cost): shown as 0"
        )
    return {
        "overhead_s_per_call": clamp(raw),
        "overhead_ci_s": [clamp(lo), clamp(hi)],
        "raw_difference_s": raw,
        "with_guards_median_s": med_w,
        "without_guards_median_s": med_wo,
        "fraction_of_call": clamp(raw) / med_w if med_w > 0 else None,
        "pairs": n,
        "clamped": clamped,
    }


def _sample(fn: Callable[[], Any], k: int, skip: bool, context: Callable) -> float:
    with torch.compiler.set_stance("default", skip_guard_eval_unsafe=skip), context():
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        return (time.perf_counter() - t0) / k


def measure(
    compiled: Callable[[], Any],
    sync: Callable[[], None],
    per_call_s: float | None,
    budget_s: float = BUDGET_S,
    context: Callable[[], AbstractContextManager] = nullcontext,
) -> dict:
    """The A/B guard cost of `compiled` (one call of the compiled model, as timed), within `budget_s`."""
    if not hasattr(torch.compiler, "set_stance"):
        return {
            "not_measured": "torch.compiler.set_stance is missing in this torch",
            "method": METHOD,
        }
    why = several_entries(dynamo_state.compilation_metrics())
    if why:
        return {"not_exact": why, "method": METHOD}

    def fn() -> Any:
        out = compiled()
        sync()
        return out

    k = max(1, round(TARGET_SAMPLE_S / per_call_s)) if per_call_s else 1
    with_s: list[float] = []
    without_s: list[float] = []
    try:
        for skip in (False, True):  # warm-up: the first call under a stance may build its state
            _sample(fn, WARMUP_CALLS, skip, context)
        deadline = time.perf_counter() + budget_s
        while len(with_s) < MAX_PAIRS and (
            len(with_s) < MIN_PAIRS or time.perf_counter() < deadline
        ):
            order = (False, True) if len(with_s) % 2 == 0 else (True, False)
            for skip in order:
                (without_s if skip else with_s).append(_sample(fn, k, skip, context))
    except RuntimeError as exc:  # the stance refuses a call that would compile (a training step's
        # frames guarded on state the calls change): the A/B cannot run, the profiler's figure stands
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return {
            "not_exact": f"a call under skip_guard_eval_unsafe needed a recompile ({first})",
            "method": METHOD,
        }
    if several_entries(dynamo_state.compilation_metrics()):
        return {"not_exact": "the calls compiled again while timed", "method": METHOD}
    return {**removal_cost(with_s, without_s), "calls_per_sample": k, "method": METHOD}
