"""Profiler view: guard-evaluation cost per compiled call, and top operators eager vs compiled.

Guard evaluation shows as `TorchDynamo Cache Lookup` events. The profiler runs separately from
the timing run so its overhead never enters the speed figures, and it is bounded by TIME
(`budget_s`, default BUDGET_S), not by a call count:

- Start-up. The first profiler session of a process costs ~1 s here (Kineto initialisation);
  later ones ~0.5 ms. An empty session pays it first, timed as `startup_s` and counted in the
  budget (in the warm child the CPU memory phase has usually paid it already).
- Processing, not calling, is the cost: `key_averages()` builds Python objects per event, 35-100 µs
  each; on a HF GPT-2 tiny (~430 events per call) that is ~15 ms per 1.3 ms call, and the old rule
  (a call count from the per-call time) took 3-7 s there. So each side runs in chunks: a first chunk
  of one call prices a call (calls + processing), and each later chunk is sized from the previous
  one's measured cost to end at the side's deadline.
- Eager is profiled only for the top-operators table: it gets EAGER_SHARE of the budget. The
  compiled side's top operators come from its first chunks, as many calls as eager had; the rest
  of the budget goes to chunks read from the raw event list only (~1.5 µs per event), for guards.
- Garbage collection is off during the phase, as `timeit` does: `key_averages()` allocates enough
  objects to set off full collections, ~0.25 s each on a GPT-2 + transformers heap, which would land
  inside a chunk, misprice the next one and overrun the budget. The garbage is collected afterwards.
- Guard cost. Each profiled call is wrapped in a `tcdoctor.call` record_function; a call's guard
  cost is the summed Cache Lookup time inside it, and the figure is the median over calls (the
  first calls of a session run slower; a mean over a few calls of a slow model would carry them).
- Compiled regions. Each compiled call's `Torch-Compiled Region: F/C` events, counted per call
  (`compile_graphs.per_call_regions`, a few integers per frame), go out as `region_calls`: the
  parent joins them with the cold first call's per-frame table (runs and time per call) and does
  not keep them in the report.

Pitfalls: the phase can outrun its budget by the minimum calls (MIN_CALLS, plus their processing) on
a slow model, by design: fewer calls resolve nothing. A call's cost grows a little with its chunk's
length (longer event lists), hence SAFETY. The top-operators table may rest on a single call of an
event-heavy model (`top_ops_calls` says how many). Traces (`--trace`) hold each side's first chunk:
one call, the first under the profiler. A model whose calls run no compiled frame has no Cache
Lookup: no figure.
"""

from __future__ import annotations

import gc
import os
import time
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from . import break_cost, compile_graphs
from .break_cost import REGION
from .context import PhaseContext
from .guards import CACHE_LOOKUP, CALL_MARK
from .guards import cost as guard_cost
from .guards import ns_per_call as guard_ns_per_call

TOP_N = 15
BUDGET_S = 1.0  # seconds for the whole phase, profiler start-up included
EAGER_SHARE = 0.25  # eager is profiled for the top-operators table only
MIN_CALLS = {
    "eager": 1,
    "compiled": 5,
}  # eager: top operators only; compiled: a median of guard costs
MAX_CALLS = 2000
SAFETY = 0.8  # a chunk's cost per call grows a little with its length (bigger event lists)


def _run(
    fn: Callable[[], Any],
    calls: int,
    device: torch.device,
    trace_path: str | None,
    context: Callable[[], AbstractContextManager] = nullcontext,
) -> profile:
    """`calls` calls of `fn`, each marked; `context` (no_grad) held around them, outside the marks,
    as the timed samples hold it (timing.py), so a call's figures hold no grad-mode flip."""
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=acts) as prof, context():
        for _ in range(calls):
            with record_function(CALL_MARK):
                fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    if trace_path:
        prof.export_chrome_trace(trace_path)
    return prof


def _raw_events(prof: profile) -> list[tuple[str, int, int]]:
    """(name, start ns, duration ns) of every event, without building per-event Python objects."""
    try:
        return [
            (e.name(), e.start_ns(), e.duration_ns()) for e in prof.profiler.kineto_results.events()
        ]
    except AttributeError:  # private API moved: the public (slow) event list
        return [
            (e.name, int(e.time_range.start * 1e3), int(e.time_range.elapsed_us() * 1e3))
            for e in prof.events()
        ]


def _accumulate(acc: dict[str, list[float]], averages: Any, device: torch.device) -> None:
    for e in averages:
        if e.key.startswith("ProfilerStep") or e.key == CALL_MARK:
            continue
        dev = getattr(e, "self_device_time_total", 0) if device.type == "cuda" else 0
        row = acc.setdefault(e.key, [0.0, 0.0, 0])
        row[0] += e.self_cpu_time_total
        row[1] += dev or 0
        row[2] += e.count


def _top(acc: dict[str, list[float]], calls: int, device: torch.device) -> list[dict]:
    rows = [
        {
            "name": name,
            "self_cpu_us_per_call": cpu / calls,
            "self_device_us_per_call": dev / calls if dev else None,
            "count_per_call": n / calls,
        }
        for name, (cpu, dev, n) in acc.items()
    ]
    key = "self_device_us_per_call" if device.type == "cuda" else "self_cpu_us_per_call"
    rows.sort(key=lambda r: -(r[key] or 0))
    return rows[:TOP_N]


def _next_chunk(
    left_s: float, calls: int, min_calls: int, averaging: bool, raw_cost: float, avg_cost: float
) -> int:
    """Calls that fit in `left_s` at the measured seconds per call (raw reading, plus key_averages when averaging)."""
    n = left_s / (raw_cost + avg_cost) if averaging else SAFETY * left_s / raw_cost
    return int(min(MAX_CALLS - calls, max(n, min_calls - calls)))


def profile_side(
    fn: Callable[[], Any],
    device: torch.device,
    deadline: float,
    min_calls: int,
    average_calls: float,
    guards: bool,
    trace_path: str | None = None,
    context: Callable[[], AbstractContextManager] = nullcontext,
) -> dict:
    """Profile `fn` in chunks until `deadline` (at least `min_calls`); key_averages over up to `average_calls`.

    The first chunk is one call: it prices a call (and its processing) before committing to more. Without
    `guards` (eager) the side ends with its averaged chunks: raw ones would feed nothing.
    """
    acc: dict[str, list[float]] = {}
    guard_ns: list[int] = []
    per_break: list[dict] = []
    region_calls: list[dict] = []
    calls = averaged = lookups = regions = 0
    avg_cost, averaging, n = 0.0, True, 1
    while n > 0:
        t = time.perf_counter()
        prof = _run(fn, n, device, trace_path if calls == 0 else None, context)
        events = _raw_events(prof)
        guard_ns += guard_ns_per_call(events)
        if guards:
            per_break += break_cost.per_call(events)
            region_calls += compile_graphs.per_call_regions(events)
        lookups += sum(1 for name, _, _ in events if name == CACHE_LOOKUP)
        regions += sum(1 for name, _, _ in events if name.startswith(REGION))
        t_raw = time.perf_counter()
        raw_cost = (t_raw - t) / n
        if averaging:
            _accumulate(acc, prof.key_averages(), device)
            avg_cost = (time.perf_counter() - t_raw) / n
            averaged += n
        calls += n
        left = deadline - time.perf_counter()
        averaging = averaged < average_calls and left > raw_cost + avg_cost
        if not averaging and not guards:
            break
        n = _next_chunk(left, calls, min_calls, averaging, raw_cost, avg_cost)
        if averaging:
            n = int(min(n, average_calls - averaged))
    return {
        "calls": calls,
        "averaged_calls": averaged,
        "top": _top(acc, averaged, device),
        "guard_ns": guard_ns,
        "lookups": lookups,
        "regions": regions,
        "per_break": per_break,
        "region_calls": region_calls,
    }


def _startup(device: torch.device) -> float:
    t = time.perf_counter()
    _run(lambda: None, 0, device, None)
    return time.perf_counter() - t


def measure(
    eager: Callable[[], Any],
    compiled: Callable[[], Any],
    device: torch.device,
    trace_dir: str | None,
    budget_s: float = BUDGET_S,
    context: Callable[[], AbstractContextManager] = nullcontext,
) -> dict:
    """Both sides within `budget_s` seconds (`--profile-budget`); `context` as in timing.measure."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _measure(eager, compiled, device, trace_dir, budget_s, context)
    finally:
        if was_enabled:
            gc.enable()


def _measure(
    eager: Callable[[], Any],
    compiled: Callable[[], Any],
    device: torch.device,
    trace_dir: str | None,
    budget_s: float,
    context: Callable[[], AbstractContextManager],
) -> dict:
    t0 = time.perf_counter()
    paths = {}
    if trace_dir:
        os.makedirs(trace_dir, exist_ok=True)
        paths = {k: os.path.join(trace_dir, f"{k}.trace.json") for k in ("eager", "compiled")}
    startup = _startup(device)
    e = profile_side(
        eager,
        device,
        t0 + EAGER_SHARE * budget_s,
        MIN_CALLS["eager"],
        float("inf"),
        False,
        paths.get("eager"),
        context,
    )
    c = profile_side(
        compiled,
        device,
        t0 + budget_s,
        MIN_CALLS["compiled"],
        e["averaged_calls"],
        True,
        paths.get("compiled"),
        context,
    )
    guard = guard_cost(c["guard_ns"], c["lookups"])
    calls = c["calls"]
    return {
        "calls_profiled": calls,
        "eager_calls_profiled": e["calls"],
        "top_ops_calls": {"eager": e["averaged_calls"], "compiled": c["averaged_calls"]},
        "guard_overhead_s_per_call": guard["overhead_s_per_call"],
        "guard_overhead_mean_s_per_call": guard["overhead_mean_s_per_call"],
        "cache_lookups_per_call": c["lookups"] / calls,
        "compiled_regions_per_call": c["regions"] / calls,
        "top_ops": {"eager": e["top"], "compiled": c["top"]},
        **break_cost.summarize(c["per_break"]),
        # per compiled call, the regions that ran: joined with compile.graphs in the parent
        "region_calls": c["region_calls"],
        "traces": paths or None,
        "budget_s": budget_s,
        "startup_s": startup,
        "wall_s": time.perf_counter() - t0,
        "method": (
            f"torch.profiler within a {budget_s:g} s budget (start-up included), separate from the timing run: "
            f"eager {e['calls']} calls, compiled {calls} calls (top operators over the first {e['averaged_calls']} "
            f"and {c['averaged_calls']}); guard cost = median over compiled calls of the '{CACHE_LOOKUP}' time "
            "in each call"
        ),
    }


def phase_profile(ctx: PhaseContext) -> dict:
    """The profile phase (ctx: the run.runner.PhaseRunner): the profiler over eager and compiled
    calls, then the guard cost by removing the guards (probes/guard_ab.py), after the profiler and
    outside every other timed figure."""
    from . import calls, guard_ab

    ctx.need_compiled()
    w, ca = ctx.workload, ctx.workload.call_args
    compiled = calls.one_call(ctx.compiled, ca, w, ctx.device)
    data = measure(
        calls.one_call(ctx.eager_subject.fn, ca, w, ctx.device),
        compiled,
        ctx.device,
        ctx.options.trace_dir,
        ctx.options.profile_budget_s,
        calls.batch_context(w),
    )
    data["guard_ab"] = guard_ab.measure(
        compiled,
        ctx.sync,
        ctx.per_call_s,
        ctx.options.profile_budget_s,
        calls.batch_context(w),
    )
    return data
