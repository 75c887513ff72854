"""Peak memory of one call, eager vs compiled, each from its own reset baseline.

CUDA has an allocator API (reset_peak_memory_stats / max_memory_allocated). CPU has none:
there the profiler's memory events give bytes allocated during the call, cross-checked by
sampling the process RSS in a thread.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from .context import PhaseContext
from .rss import RssPeak


def _profiler_peak(fn: Callable[[], Any]) -> int | None:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    try:
        tree = prof.profiler.kineto_results.experimental_event_tree()
    except Exception:  # noqa: BLE001 - private API; fall back to RSS only
        return None
    peak = 0
    stack = list(tree)
    while stack:
        node = stack.pop()
        extra = getattr(node, "extra_fields", None)
        total = getattr(extra, "total_allocated", None)
        if total is not None:
            peak = max(peak, int(total))
        stack.extend(getattr(node, "children", []) or [])
    return peak


def peak_of_call(fn: Callable[[], Any], device: torch.device) -> dict:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        return {"peak_bytes": torch.cuda.max_memory_allocated(device) - base}
    prof = _profiler_peak(fn)
    with RssPeak(interval_s=0.0005) as rss:
        fn()
    return {
        "peak_bytes": prof if prof is not None else rss.peak_delta,
        "profiler_bytes": prof,
        "rss_delta_bytes": rss.peak_delta,
    }


def measure(eager: Callable[[], Any], compiled: Callable[[], Any], device: torch.device) -> dict:
    e = peak_of_call(eager, device)
    c = peak_of_call(compiled, device)
    if device.type == "cuda":
        method = "torch.cuda.max_memory_allocated after reset_peak_memory_stats, minus memory_allocated before the call"
    else:
        method = (
            "CPU: peak of total bytes allocated during one call from torch.profiler memory events "
            "(profile_memory=True); RSS growth sampled every 0.5 ms in a second call as a cross-check"
        )
    return {
        "eager_peak_bytes": e["peak_bytes"],
        "compiled_peak_bytes": c["peak_bytes"],
        "ratio": (c["peak_bytes"] / e["peak_bytes"]) if e["peak_bytes"] else None,
        "eager": e,
        "compiled": c,
        "method": method,
    }


def phase_memory(ctx: PhaseContext) -> dict:
    """The memory phase: one eager and one compiled call (ctx: the run.runner.PhaseRunner)."""
    ctx.need_compiled()
    return measure(ctx.eager_fn, ctx.compiled_fn, ctx.device)
