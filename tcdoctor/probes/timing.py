"""Steady-state eager vs compiled time in one process: warm-up, then paired rounds until the
confidence interval answers the row's question, within a floor and a ceiling.

A round runs one side back to back, as the user's loop runs one model call after another: first
one untimed sample (the switch: the first calls after the other side ran pay for it, caches and the
allocator's free lists refilled), then samples of k calls each, for about ROUND_S, and gives its
median sample. The untimed switch sample matters: with rounds of one or two samples (a call of
20 ms or more) the median was the switch sample itself, and a ResNet-18 compiled with Inductor on
one CPU thread read 0.89-0.93× against `blocked_autorange`'s 0.82-0.86× in the same process
(the first compiled call after an eager one runs faster, the first eager call after a compiled one
slower); without it, 0.81-0.83× (benchmarks/fidelity_in_process.py --model resnet18).
Rounds pair up and alternate order (A B, B A, …) so drift and order effects cancel; the speedup is
a ratio of medians with a paired-bootstrap confidence interval (stats.ratio_of_medians_ci).

A sample is a block of k back-to-back calls with the device synchronised only at its two edges,
timed with perf_counter around the block: the per-call figure is the block's time / k. On a device
that runs the work asynchronously (CUDA), the CPU launches call n+1 while the device runs call n,
as in a training loop; a sync after every call would add the launch work the loop hides to every
call (a GPT-2 training step read 1.50× that way on an H100, 2.03× in a loop of 20 timed with CUDA
events). A block there has at least ASYNC_BLOCK_CALLS calls (the loop the benchmark article times
with CUDA events), so what the sync at its edges still exposes (one call's launch before the device
starts, the last call's tail) is at most about 1/ASYNC_BLOCK_CALLS of the block; longer calls cap
it at about MAX_ASYNC_BLOCK_S. On the CPU a call runs synchronously: its blocks stay about
TARGET_SAMPLE_S long, and a sync per block changes nothing there. This is the figure of a loop;
a model served one request at a time, synchronised after each, pays the launch work too (not
measured here).

Pitfall: that interval covers this process only. Another process of the same script can differ by
more (allocator state, page faults, code placement, neighbours), so the report's headline speedup
combines several processes (report/processes/), never one process's pairs.

How long. A row asks a question (`Question`): is compiled faster than eager, than the required
speedup, than the main analysis? Sampling stops at the first check where the CI lies wholly on one
side of every threshold and is no wider than ±ANSWER_HALF_WIDTH, or is narrower than
±PRECISE_HALF_WIDTH (a speedup that sits on a threshold is then known as well as the machine lets
it be), never before the floor (MIN_PAIRS pairs and `floor_s`) and never after the ceiling (the
budget, --budget). Checks run at geometrically spaced pair counts (×CHECK_GROWTH), each with a
cheaper bootstrap (CHECK_RESAMPLES), so optional stopping looks only a few times; the reported CI is
the full 1000-resample one. The row says how many pairs it took and why it stopped.

A disturbed round. When another program takes a core this process's threads need (2 threads on 2
shared cores), one call can slow 10–60× (a ResNet-18 call of 952 ms against 16 ms); pooled as data,
such a pair moves the medians and widens the interval. So each round is read between two load
snapshots (probes/load.py: other processes' CPU time, this process's own, and its involuntary
context switches), taken outside its timed samples. A round is loaded when the others took cores
this process needed: they used more than LOADED_OTHER_CORES of a core on average during it (and over
a clock tick: /proc/stat's resolution) while the machine had less than ROOM_CORES core left idle
(what this process used, its need, plus the others' filled it: on 2 cores with a busy program
beside a CPU-bound step, always; on 16 cores with one core of others beside a step that waits on
its GPU and keeps one core busy, never: 14 stay idle); or this process's threads were pushed off
their cores more than LOADED_SWITCHES_PER_S times a second (and more than LOADED_MIN_SWITCHES). A pair with a loaded round is run again, same order, and the new pair
replaces it, within RETIME_SHARE of the row's budget and MAX_RETIMES reruns; pairs still loaded are
kept, and counted in the result's `load`. Distributed ranks agree on every rerun (any rank loaded).

Each sample is k back-to-back calls under one entry of `context` (the workload's no_grad, see
calls.batch_context), as a hand-written loop holds it: entering it per call would flip grad mode
every call, a fixed per-call cost that is not the model's. Autocast stays per call (calls.one_call).
"""

from __future__ import annotations

import math
import statistics
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import stats
from ..report.processes.regimes import ROOM_CORES
from . import dynamo_state, load
from .context import PhaseContext

TARGET_SAMPLE_S = 0.002  # one sample batches calls until it lasts about this long
# A block on an asynchronous device (CUDA) has at least this many back-to-back calls (the
# benchmark article's loop of 20 steps timed with CUDA events), unless that passes MAX_ASYNC_BLOCK_S
ASYNC_BLOCK_CALLS = 20
MAX_ASYNC_BLOCK_S = 2.0
# A round runs one side's samples back to back for about this long (at most MAX_ROUND_SAMPLES)
ROUND_S = 0.02
MAX_ROUND_SAMPLES = 10
# The slower side's round lasts at most about this long: with k set by the faster side, a side
# 1,000× slower (a compiled call of 21 ms against 20 µs eager) made each sample seconds long, and
# MIN_PAIRS pairs overran a 0.2 s --budget by minutes
MAX_ROUND_S = 0.2
MIN_PAIRS = 10
MAX_PAIRS = 2000
FLOOR_S = 0.5  # no row stops sampling before this (or its budget, if smaller)
ANSWER_HALF_WIDTH = 0.025  # a CI clear of every threshold answers once this narrow (relative)
PRECISE_HALF_WIDTH = 0.01  # a CI this narrow answers whatever it straddles
CHECK_GROWTH = 1.5  # the next check after this many times the pairs of the last
CHECK_RESAMPLES = 200
# A loaded round (probes/load.py). Timing runs as many threads as cores, so any other process's CPU
# time comes out of this process's: a thread pushed off its core stalls the others at the next
# barrier of a parallel region. Half a core on average is far above a quiet machine (kernel threads:
# a few hundredths of a core) and, on a round of ROUND_S, is one clock tick of /proc/stat.
LOADED_OTHER_CORES = 0.5
# and never less than this: the tick rounding (under one tick) plus the kernel's sampled busy time
# against this process's exact CPU time (a quiet 20 ms round read 0.47 and 0.53 of a core)
LOADED_MIN_OTHER_S = 1.25 * load.RESOLUTION_S
# each involuntary switch takes a thread off its core for a scheduler slice (~1-3 ms): 100 a second
# is 10-30% of a thread's time; a quiet machine shows a few a second (timers, kernel threads)
LOADED_SWITCHES_PER_S = 100
LOADED_MIN_SWITCHES = 3  # and more than this many, whatever the rate gives a short round
RETIME_SHARE = 0.25  # reruns of loaded pairs may take this share of the row's budget
MAX_RETIMES = 200  # and at most this many reruns


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


def block_calls(device_type: str) -> int:
    """The fewest calls in a timed block on this device type: ASYNC_BLOCK_CALLS where calls
    return before the device has done their work (every accelerator PyTorch drives: CUDA, XPU,
    MPS, ...), 1 on the CPU."""
    return 1 if device_type == "cpu" else ASYNC_BLOCK_CALLS


def sample_sizes(fast_s: float, slow_s: float, min_calls: int = 1) -> tuple[int, int]:
    """(k calls per sample, r samples per round) for sides whose calls take `fast_s` and `slow_s`.

    Both sides use the same k and r, set by the faster side: its sample lasts about
    TARGET_SAMPLE_S and its round about ROUND_S. The slower side's round then lasts (slow/fast)
    times longer; where that passes MAX_ROUND_S, r shrinks first, then k, so that no pair lasts
    more than about 2 × MAX_ROUND_S whatever the ratio (sides within about 10× of each other are
    unaffected). `min_calls` (block_calls: an asynchronous device's loop) keeps k at least that
    many, unless the slower side's block would pass MAX_ASYNC_BLOCK_S."""
    k = max(min_calls, min(10_000, math.ceil(TARGET_SAMPLE_S / max(fast_s, 1e-7))))
    r = max(1, min(MAX_ROUND_SAMPLES, math.ceil(ROUND_S / max(k * fast_s, 1e-7))))
    r = max(1, min(r, math.floor(MAX_ROUND_S / max(k * slow_s, 1e-9))))
    if k * slow_s > MAX_ROUND_S:
        floor_k = min(min_calls, math.floor(MAX_ASYNC_BLOCK_S / max(slow_s, 1e-9)))
        k = max(1, floor_k, math.floor(MAX_ROUND_S / slow_s))
    return k, r


def switch_calls(k: int, call_s: float) -> int:
    """Calls in a round's untimed switch sample: one sample's worth (k) on the CPU, where k is
    about TARGET_SAMPLE_S of calls; about TARGET_SAMPLE_S of calls (at least one) where an
    asynchronous device's block is longer."""
    return max(1, min(k, math.ceil(TARGET_SAMPLE_S / max(call_s, 1e-7))))


def warm_up(
    compiled: Callable[[], Any],
    eager: Callable[[], Any],
    sync,
    context: Context = nullcontext,
    held: Any = None,
) -> dict:
    """Call compiled until STABLE_CALLS calls in a row compile nothing; eager gets as many calls.
    `held` (probes/memory.Held, opened before the compiled copy's first call) is closed between
    the two sides' calls: what the compiled copy keeps after its warm-up, eager's calls outside."""
    calls = stable = 0
    with context():
        while _agree(stable < STABLE_CALLS and calls < MAX_WARMUP_CALLS, "any"):
            mark = dynamo_state.Mark()
            compiled()
            calls += 1
            stable = 0 if mark.since() else stable + 1
        if held is not None:
            held.stop()
        for _ in range(calls):
            eager()
        sync()
    return {"warmup_calls": calls, "still_compiling": stable < STABLE_CALLS}


def _answered(question: Question, e_s: list[float], c_s: list[float]) -> bool:
    """The check at a pair count: the question's answer from a cheaper bootstrap of the pairs so far."""
    lo, hi = stats.ratio_of_medians_ci(e_s, c_s, resamples=CHECK_RESAMPLES)
    return question.answered(lo, hi, statistics.median(e_s) / statistics.median(c_s))


@dataclass(frozen=True)
class _Round:
    median_s: float
    faults_per_call: float | None
    window: load.Window | None  # the load during the round (None: not measured)


def _round(
    fn: Callable[[], Any], k: int, r: int, sync, context: Context, switch: int = 1
) -> _Round:
    """One side's round: an untimed switch sample of `switch` calls (the first calls after the other
    side ran carry the switch cost: caches and free lists refilled, which a loop running one model
    does not pay), then `r` samples of `k` back-to-back calls, run back to back as the user's loop
    runs; the round's figure is its median sample. Minor faults per call over the timed samples,
    and the load around them: both read outside the timed samples."""
    _batch(fn, switch, sync, None, context)
    before = load.snapshot()
    f0 = _minor_faults()
    times = [_batch(fn, k, sync, None, context) for _ in range(r)]
    faults = (_minor_faults() - f0) / (k * r) if f0 is not None else None
    after = load.snapshot()
    window = after.since(before) if before is not None and after is not None else None
    return _Round(statistics.median(times), faults, window)


def _pair(
    i: int, eager, compiled, k: int, r: int, sync, context: Context, switch: int = 1
) -> tuple[_Round, _Round]:
    """Pair `i`: (eager round, compiled round), eager first in even pairs, compiled first in odd."""
    if i % 2 == 0:
        e = _round(eager, k, r, sync, context, switch)
        return e, _round(compiled, k, r, sync, context, switch)
    c = _round(compiled, k, r, sync, context, switch)
    return _round(eager, k, r, sync, context, switch), c


def _loaded(w: load.Window | None) -> bool:
    """Whether a round ran under load (the module docstring; None: not measured, not loaded).
    A window without this process's own CPU time (made by hand) is judged as if the process needed
    every core."""
    if w is None:
        return False
    others = w.other_cpu_s > max(LOADED_OTHER_CORES * w.wall_s, LOADED_MIN_OTHER_S)
    idle = w.idle_cores
    needed = idle is None or idle < ROOM_CORES  # the others took cores this process needed
    switches = w.involuntary > max(LOADED_MIN_SWITCHES, LOADED_SWITCHES_PER_S * w.wall_s)
    return (others and needed) or switches


def _pair_loaded(pair: tuple[_Round, _Round]) -> bool:
    return _loaded(pair[0].window) or _loaded(pair[1].window)


@dataclass
class _Pairs:
    """The kept pairs of one timing: each side's round medians and minor faults per call (a call
    that allocates and frees large buffers may re-fault them every call, depending on the malloc
    heap's history), each pair's rounds' load windows, and the reruns of loaded pairs."""

    e_s: list[float] = field(default_factory=list)
    c_s: list[float] = field(default_factory=list)
    e_f: list[float] = field(default_factory=list)
    c_f: list[float] = field(default_factory=list)
    windows: list[tuple[load.Window | None, load.Window | None]] = field(default_factory=list)
    retimes: int = 0
    retime_s: float = 0.0

    def keep(self, pair: tuple[_Round, _Round]) -> None:
        for rnd, medians, faults in ((pair[0], self.e_s, self.e_f), (pair[1], self.c_s, self.c_f)):
            medians.append(rnd.median_s)
            if rnd.faults_per_call is not None:
                faults.append(rnd.faults_per_call)
        self.windows.append((pair[0].window, pair[1].window))


def _sample(
    run: Callable[[int], tuple[_Round, _Round]],
    start: float,
    budget_s: float,
    question: Question | None,
) -> tuple[_Pairs, str]:
    """Pairs (`run(i)`: pair i) from `start` (perf_counter) until the question is answered (after
    the floor) or the budget ends, at least MIN_PAIRS and at most MAX_PAIRS; a pair with a loaded
    round runs again, same order, and replaces it, within the retime budget. (the kept pairs, why
    it stopped)"""
    kept = _Pairs()
    deadline = start + budget_s
    floor = start + min(budget_s, question.floor_s) if question else deadline
    next_check, stopped = MIN_PAIRS, "budget"
    while _agree(
        len(kept.e_s) < MAX_PAIRS and (len(kept.e_s) < MIN_PAIRS or time.perf_counter() < deadline),
        "all",
    ):
        # every rank takes the same checks: the pair count is the same on all, the floor is agreed
        if question and len(kept.e_s) >= next_check and _agree(time.perf_counter() >= floor, "all"):
            next_check = math.ceil(len(kept.e_s) * CHECK_GROWTH)
            if _agree(_answered(question, kept.e_s, kept.c_s), "all"):
                stopped = "answered"
                break
        t0 = time.perf_counter()
        pair = run(len(kept.e_s))
        pair_s = time.perf_counter() - t0
        # every rank reruns the same pairs (any rank loaded)
        while _agree(
            _pair_loaded(pair)
            and kept.retimes < MAX_RETIMES
            and kept.retime_s + pair_s <= RETIME_SHARE * budget_s,
            "any",
        ):
            t0 = time.perf_counter()
            pair = run(len(kept.e_s))
            pair_s = time.perf_counter() - t0
            kept.retime_s += pair_s
            kept.retimes += 1
        kept.keep(pair)
    return kept, stopped if len(kept.e_s) < MAX_PAIRS else "max pairs"


def measure(
    eager: Callable[[], Any],
    compiled: Callable[[], Any],
    sync,
    budget_s: float,
    context: Context = nullcontext,
    question: Question | None = None,
    min_calls: int = 1,
    held: Any = None,
) -> dict:
    """`eager`/`compiled` make one plain call each; `context` is entered once per sample.
    `question`: stop as soon as the CI answers it (after the floor); None times the whole budget.
    `min_calls`: the fewest calls in a block (`block_calls` of the device: an asynchronous device's
    loop). `held`: closed after the compiled side's warm-up (`warm_up`)."""
    t_start = time.perf_counter()
    warm = warm_up(compiled, eager, sync, context, held)
    ests = (_steady_call_s(eager, sync, context), _steady_call_s(compiled, sync, context))
    est = min(ests)
    k, r = (int(_agree(n, "max")) for n in sample_sizes(est, max(ests), min_calls))
    switch = int(_agree(switch_calls(k, est), "max"))
    mark = dynamo_state.Mark()
    load_start = load.snapshot()
    t_timing = time.perf_counter()
    kept, stopped = _sample(
        lambda i: _pair(i, eager, compiled, k, r, sync, context, switch),
        t_timing,
        budget_s,
        question,
    )
    load_data = _load_summary(kept.windows, kept.retimes, load_start, load.snapshot(), budget_s)
    e_s, c_s = kept.e_s, kept.c_s
    lo, hi = stats.ratio_of_medians_ci(e_s, c_s)
    eager_sum, comp_sum = stats.summarize(e_s), stats.summarize(c_s)
    eager_sum["minor_faults_per_call"] = statistics.median(kept.e_f) if kept.e_f else None
    comp_sum["minor_faults_per_call"] = statistics.median(kept.c_f) if kept.c_f else None
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
        "switch_calls": switch,
        "budget_s": budget_s,
        "timing_s": time.perf_counter() - t_timing,
        "stopped": stopped,
        "wall_s": time.perf_counter() - t_start,
        "recompiles_during_timing": len(mark.since()),
        "method": (
            f"{warm['warmup_calls']} warm-up calls each; then {len(e_s)} pairs of rounds, eager and "
            f"compiled, order alternating; in a round one side runs {switch} untimed call(s) (the "
            f"switch from the other side), then {r} sample(s) of {k} back-to-back call(s) in a row "
            f"(about {_ms(r * k * est)}, as the user's loop runs), each sample timed between two "
            f"syncs at its edges{_async_text(min_calls, k)}, and gives its median sample"
            + ("" if context is nullcontext else ", each sample under one held no_grad")
            + _stop_text(stopped, question, budget_s, len(e_s))
            + _load_text(load_data)
        ),
        "load": load_data,
        "raw": {"eager_s": e_s[:MAX_PAIRS], "compiled_s": c_s[:MAX_PAIRS]},
        **warm,
    }


def _load_summary(
    windows: list[tuple[load.Window | None, load.Window | None]],
    retimes: int,
    start: load.Snapshot | None,
    end: load.Snapshot | None,
    budget_s: float,
) -> dict:
    """The `load` of a timing result: how loaded the kept pairs' rounds were, how many pairs were
    rerun and how many kept pairs are still loaded; {"not_measured": why} where load is unreadable."""
    rounds = [w for pair in windows for w in pair if w is not None]
    cores = [w.other_cores for w in rounds]
    if start is None or end is None or not cores:
        why = load.why_not() or "no round's load was read"
        return {"not_measured": why}
    own = [w.own_cores for w in rounds if w.own_cores is not None]
    idle = [w.idle_cores for w in rounds if w.idle_cores is not None]
    return {
        "other_cores_median": statistics.median(cores),
        "other_cores_max": max(cores),
        "own_cores_median": statistics.median(own) if own else None,
        "idle_cores_median": statistics.median(idle) if idle else None,
        "cores": rounds[0].machine,
        "loaded_pairs": sum(_loaded(e) or _loaded(c) for e, c in windows),
        "retimed_pairs": retimes,
        "involuntary_switches": end.involuntary - start.involuntary,
        "method": (
            "around each round, the CPU time other processes took on the machine (its busy time in "
            "/proc/stat, 10 ms ticks, minus this process's), this process's own (what it needed) "
            "and its involuntary context switches; a round is loaded when the others took cores it "
            f"needed: above {LOADED_OTHER_CORES:g} of a core on average (and "
            f"{LOADED_MIN_OTHER_S * 1e3:.3g} ms) while less than {ROOM_CORES:g} of the machine's "
            f"{rounds[0].machine} core(s) stayed idle; or {LOADED_SWITCHES_PER_S} switches a second "
            f"(and {LOADED_MIN_SWITCHES}); "
            f"a pair with a loaded round was rerun, same order, and replaced (at most {MAX_RETIMES} "
            f"reruns in {RETIME_SHARE * budget_s:.3g} s, {RETIME_SHARE:.0%} of the budget); "
            "other_cores_median and _max, own_cores_median and idle_cores_median are over the kept "
            "pairs' rounds, loaded_pairs counts the kept pairs still loaded, involuntary_switches "
            "every switch during timing"
        ),
    }


def _load_text(data: dict) -> str:
    if "not_measured" in data:
        return f"; load not measured ({data['not_measured']})"
    return (
        f"; pairs with a round under load (others above {LOADED_OTHER_CORES:g} of a core while no "
        f"core stayed idle) rerun: {data['retimed_pairs']} rerun(s), {data['loaded_pairs']} pair(s) "
        "kept still loaded"
    )


def _async_text(min_calls: int, k: int) -> str:
    """How the blocks suit an asynchronous device (nothing on the CPU)."""
    if min_calls <= 1:
        return ""
    if k >= min_calls:
        return (
            f" (an asynchronous device: at least {min_calls} calls a block, the CPU launching call "
            "n+1 while the device runs call n, as in a loop)"
        )
    return (
        f" (an asynchronous device: {k} call(s) a block, fewer than {min_calls} because a block "
        f"is capped near {MAX_ASYNC_BLOCK_S:g} s; the launch work the sync at its edges exposes is "
        f"up to about 1/{k} of it)"
    )


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


def phase_runtime(ctx: PhaseContext) -> dict:
    """The runtime phase, and runtime_warm (the same timing in the warm process, right after its
    first call: a second process's figure for the headline speedup, report/processes/claims.py).
    ctx: the run.runner.PhaseRunner; eager is its eager subject, compiled its timed copy."""
    from . import calls, memory

    ctx.need_compiled()
    w, ca = ctx.workload, ctx.workload.call_args
    if ctx.held is None:  # the timed copy's first call is the warm-up's first (cold, in-process)
        ctx.held = memory.Held(ctx.device).start()
    data = measure(
        calls.one_call(ctx.eager_subject.fn, ca, w, ctx.device),
        calls.one_call(ctx.compiled, ca, w, ctx.device),
        ctx.sync,
        ctx.options.budget_s,
        calls.batch_context(w),
        ctx.timing_question(),
        block_calls(ctx.device.type),
        ctx.held,
    )
    ctx.per_call_s = data["compiled"]["median_s"]
    return data


def phase_runtime_extra(ctx: PhaseContext) -> dict:
    """A timing-only process's timing (run/launcher.py starts them until --processes have timed,
    and one with glibc's thresholds pinned when every process page-faulted), as a plain script
    runs: the object build() returned, compiled, its first call against the main cache, then
    the same timing on that object (eager and compiled share it, as in the user's script).
    `ctx.timing_process` says which, why and in which environment."""
    from ..target.pristine import reset_rng_state

    subject = ctx.original()
    ctx.compiled, ctx.eager_subject = ctx.torch_compile(subject), subject
    reset_rng_state()
    ctx.call(ctx.compiled)
    ctx.sync()
    return dict(phase_runtime(ctx), **ctx.timing_process)
