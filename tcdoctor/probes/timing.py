"""Steady-state eager vs compiled time in one process: warm-up, then paired rounds until the
confidence interval answers the row's question, within a floor and a ceiling.

A round runs one side back to back (samples of k calls each, for about ROUND_S) and gives its
median sample, as a model in service runs one model call after another; switching sides every
sample made each sample pay the switch (the other side's working set evicted from the caches).
Rounds pair up and alternate order (A B, B A, …) so drift and order effects cancel; the speedup is
a ratio of medians with a paired-bootstrap confidence interval (stats.ratio_of_medians_ci).

Pitfall: that interval covers this process only. Another process of the same script can differ by
more (allocator state, page faults, code placement, neighbours), so the report's headline speedup
combines several processes (report/runtime_processes.py), never one process's pairs.

How long. A row asks a question (`Question`): is compiled faster than eager, than the required
speedup, than the main analysis? Sampling stops at the first check where the CI lies wholly on one
side of every threshold and is no wider than ±ANSWER_HALF_WIDTH, or is narrower than
±PRECISE_HALF_WIDTH (a speedup that sits on a threshold is then known as well as the machine lets
it be), never before the floor (MIN_PAIRS pairs and `floor_s`) and never after the ceiling (the
budget, --budget). Checks run at geometrically spaced pair counts (×CHECK_GROWTH), each with a
cheaper bootstrap (CHECK_RESAMPLES), so optional stopping looks only a few times; the reported CI is
the full 1000-resample one. The row says how many pairs it took and why it stopped.

Each sample is k back-to-back calls under one entry of `context` (the workload's no_grad, see
calls.batch_context), as a hand-written loop holds it: entering it per call would flip grad mode
every call, a fixed per-call cost that is not the model's. Autocast stays per call (calls.one_call).
"""

from __future__ import annotations

import math
import statistics
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Callable

from .. import stats
from . import dynamo_state

TARGET_SAMPLE_S = 0.002  # one sample batches calls until it lasts about this long
# A round runs one side's samples back to back for about this long (at most MAX_ROUND_SAMPLES)
ROUND_S = 0.02
MAX_ROUND_SAMPLES = 10
MIN_PAIRS = 10
MAX_PAIRS = 2000
FLOOR_S = 0.5  # no row stops sampling before this (or its budget, if smaller)
ANSWER_HALF_WIDTH = 0.025  # a CI clear of every threshold answers once this narrow (relative)
PRECISE_HALF_WIDTH = 0.01  # a CI this narrow answers whatever it straddles
CHECK_GROWTH = 1.5  # the next check after this many times the pairs of the last
CHECK_RESAMPLES = 200


@dataclass(frozen=True)
class Question:
    """What a timed row must answer: on which side of each threshold its speedup lies (1.0 is
    eager's speed; the required speedup; the main analysis's speedup for a tried fix)."""

    thresholds: tuple[float, ...] = (1.0,)
    floor_s: float = FLOOR_S

    def answered(self, lo: float, hi: float, median: float) -> bool:
        half = (hi - lo) / 2 / median if median > 0 else math.inf
        if half <= PRECISE_HALF_WIDTH:
            return True
        clear = all(hi < t or lo > t for t in self.thresholds)
        return clear and half <= ANSWER_HALF_WIDTH

    def describe(self) -> str:
        return " and ".join(f"{t:.3g}×" for t in self.thresholds)


MAX_WARMUP_CALLS = 50
STABLE_CALLS = 3
EST_CALLS = 3  # back-to-back calls per side whose fastest sets the calls per sample

# Distributed runs (run/rank.py) install a function here that makes every rank take the same loop
# decision ("any": go on while any rank wants to, "all": while every rank does, "max": the largest
# number), so a model that runs a collective per call never waits on a rank that stopped calling.
AGREE: Callable[[Any, str], Any] | None = None


def _agree(value: Any, how: str) -> Any:
    return AGREE(value, how) if AGREE else value


def _minor_faults() -> int | None:
    """Minor page faults of this process so far (None where getrusage has no such count)."""
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    except (ImportError, OSError, AttributeError):
        return None


Context = Callable[[], AbstractContextManager]


def _batch(
    fn: Callable[[], Any],
    k: int,
    sync: Callable[[], None],
    faults: list | None = None,
    context: Context = nullcontext,
) -> float:
    sync()
    f0 = _minor_faults() if faults is not None else None
    with context():
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        sync()
        elapsed = (time.perf_counter() - t0) / k
    if f0 is not None:
        faults.append((_minor_faults() - f0) / k)
    return elapsed


def _steady_call_s(fn: Callable[[], Any], sync, context: Context) -> float:
    """One call's time once the side is running: the fastest of EST_CALLS back-to-back calls.

    It sets the calls per sample. A single call right after the other side's carries the switch
    cost (caches refilled), which made the samples shorter than TARGET_SAMPLE_S (HF GPT-2: 4 calls
    of ~340 µs, a sample of 1.4 ms) and so put more of that cost into every sample.
    """
    times = []
    with context():
        for _ in range(EST_CALLS):
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t0)
            if times[-1] >= TARGET_SAMPLE_S:
                break  # one call fills a sample anyway (k = 1): no more calls outside the budget
    return min(times)


def warm_up(
    compiled: Callable[[], Any], eager: Callable[[], Any], sync, context: Context = nullcontext
) -> dict:
    """Call compiled until STABLE_CALLS calls in a row compile nothing; eager gets as many calls."""
    calls = stable = 0
    with context():
        while _agree(stable < STABLE_CALLS and calls < MAX_WARMUP_CALLS, "any"):
            n = len(dynamo_state.compilation_metrics())
            compiled()
            calls += 1
            stable = stable + 1 if len(dynamo_state.compilation_metrics()) == n else 0
        for _ in range(calls):
            eager()
        sync()
    return {"warmup_calls": calls, "still_compiling": stable < STABLE_CALLS}


def _answered(question: Question, e_s: list[float], c_s: list[float]) -> bool:
    """The check at a pair count: the question's answer from a cheaper bootstrap of the pairs so far."""
    lo, hi = stats.ratio_of_medians_ci(e_s, c_s, resamples=CHECK_RESAMPLES)
    return question.answered(lo, hi, statistics.median(e_s) / statistics.median(c_s))


def _round(fn: Callable[[], Any], k: int, r: int, sync, faults: list, context: Context) -> float:
    """One side's round: `r` samples of `k` back-to-back calls, run back to back as a model in
    service runs; the round's figure is its median sample (the first sample after the other side ran
    carries the switch cost: caches refilled, which a server running one model does not pay).
    Faults per call over the whole round go to `faults`."""
    f0 = _minor_faults()
    times = [_batch(fn, k, sync, None, context) for _ in range(r)]
    if f0 is not None:
        faults.append((_minor_faults() - f0) / (k * r))
    return statistics.median(times)


def measure(
    eager: Callable[[], Any],
    compiled: Callable[[], Any],
    sync,
    budget_s: float,
    context: Context = nullcontext,
    question: Question | None = None,
) -> dict:
    """`eager`/`compiled` make one plain call each; `context` is entered once per sample.
    `question`: stop as soon as the CI answers it (after the floor); None times the whole budget."""
    t_start = time.perf_counter()
    warm = warm_up(compiled, eager, sync, context)
    est = min(_steady_call_s(eager, sync, context), _steady_call_s(compiled, sync, context))
    k = int(_agree(max(1, min(10_000, math.ceil(TARGET_SAMPLE_S / max(est, 1e-7)))), "max"))
    r = int(_agree(max(1, min(MAX_ROUND_SAMPLES, math.ceil(ROUND_S / max(k * est, 1e-7)))), "max"))
    n_metrics = len(dynamo_state.compilation_metrics())
    e_s: list[float] = []
    c_s: list[float] = []
    # minor page faults per call of each round: a call that allocates and frees large buffers may
    # re-fault them every call, depending on the malloc heap's history
    e_f: list[float] = []
    c_f: list[float] = []
    t_timing = time.perf_counter()
    deadline = t_timing + budget_s
    floor = t_timing + min(budget_s, question.floor_s) if question else deadline
    next_check, stopped = MIN_PAIRS, "budget"
    while _agree(
        len(e_s) < MAX_PAIRS and (len(e_s) < MIN_PAIRS or time.perf_counter() < deadline), "all"
    ):
        # every rank takes the same checks: the pair count is the same on all, the floor is agreed
        if question and len(e_s) >= next_check and _agree(time.perf_counter() >= floor, "all"):
            next_check = math.ceil(len(e_s) * CHECK_GROWTH)
            if _agree(_answered(question, e_s, c_s), "all"):
                stopped = "answered"
                break
        if len(e_s) % 2 == 0:
            e_s.append(_round(eager, k, r, sync, e_f, context))
            c_s.append(_round(compiled, k, r, sync, c_f, context))
        else:
            c_s.append(_round(compiled, k, r, sync, c_f, context))
            e_s.append(_round(eager, k, r, sync, e_f, context))
    lo, hi = stats.ratio_of_medians_ci(e_s, c_s)
    eager_sum, comp_sum = stats.summarize(e_s), stats.summarize(c_s)
    eager_sum["minor_faults_per_call"] = statistics.median(e_f) if e_f else None
    comp_sum["minor_faults_per_call"] = statistics.median(c_f) if c_f else None
    return {
        "eager": eager_sum,
        "compiled": comp_sum,
        "speedup": eager_sum["median_s"] / comp_sum["median_s"],
        "speedup_ci": [lo, hi],
        "ci_level": 0.95,
        "ci_method": "percentile bootstrap over paired rounds, 1000 resamples",
        "samples": len(e_s),
        "calls_per_sample": k,
        "samples_per_round": r,
        "budget_s": budget_s,
        "timing_s": time.perf_counter() - t_timing,
        "stopped": stopped if len(e_s) < MAX_PAIRS else "max pairs",
        "wall_s": time.perf_counter() - t_start,
        "recompiles_during_timing": len(dynamo_state.compilation_metrics()) - n_metrics,
        "method": (
            f"{warm['warmup_calls']} warm-up calls each; then {len(e_s)} pairs of rounds, eager and "
            f"compiled, order alternating; in a round one side runs {r} sample(s) of {k} back-to-back "
            f"call(s) in a row (about {_ms(r * k * est)}, as a model in service runs) and gives its "
            "median sample"
            + ("" if context is nullcontext else ", each sample under one held no_grad")
            + _stop_text(stopped, question, budget_s, len(e_s))
        ),
        "raw": {"eager_s": e_s[:MAX_PAIRS], "compiled_s": c_s[:MAX_PAIRS]},
        **warm,
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _stop_text(stopped: str, question: Question | None, budget_s: float, pairs: int) -> str:
    if pairs >= MAX_PAIRS:
        return f"; stopped at the cap of {MAX_PAIRS} pairs"
    if question is None:
        return f"; sampled for the whole {budget_s:g} s budget"
    if stopped == "answered":
        return (
            f"; stopped once the CI answered where the speedup lies against {question.describe()} "
            f"(floor {min(budget_s, question.floor_s):g} s, ceiling {budget_s:g} s)"
        )
    return f"; the CI had not answered against {question.describe()} by the {budget_s:g} s ceiling"
