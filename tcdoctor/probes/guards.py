"""Guards: how many the first call installed, what evaluating them costs per call, and its share.

Every compiled call first evaluates the guards of the cache entries of each frame it enters
(`TorchDynamo Cache Lookup` in the profiler). For small models that fixed cost is the headline
figure: it is why a compiled `x + 1` loses to eager. Pitfalls:

- Count: `CompilationMetrics.guard_count` is per compiled frame; a model with graph breaks
  has several frames, so the count is their sum over the first call's frames.
- Cost: `CompilationMetrics.guard_latency_us` is one sample taken at compile time, not the steady
  state; the cost here comes from profiled steady-state calls (probes/profile.py collects the
  events), as the median over calls of the Cache Lookup time inside each call, since one call
  can enter several frames (one lookup each).
- Share: cost / the compiled call's median from the timing phase, never from profiled calls
  (the profiler slows calls down).

Torch-free: the report assembles this section without importing torch.
"""

from __future__ import annotations

import bisect
import statistics

CACHE_LOOKUP = "TorchDynamo Cache Lookup"
CALL_MARK = "tcdoctor.call"  # record_function around each profiled call

COUNT_SOURCE = "CompilationMetrics.guard_count of each frame compiled by the first call"


def count(frames: list[dict]) -> dict:
    """Guards installed by the first call, in total and per compiled frame."""
    counts = [f["guard_count"] for f in frames if f.get("guard_count") is not None]
    return {
        "count": sum(counts) if counts else None,
        "per_frame": [
            {
                "function": f["function"],
                "compile_id": f["compile_id"],
                "guard_count": f["guard_count"],
            }
            for f in frames
        ],
        "source": COUNT_SOURCE,
    }


def ns_per_call(events: list[tuple[str, int, int]]) -> list[int]:
    """Summed Cache Lookup duration inside each `tcdoctor.call` mark, one entry per call, in call order.

    `events` are (name, start ns, duration ns).
    """
    marks = sorted((start, start + dur) for name, start, dur in events if name == CALL_MARK)
    starts = [m[0] for m in marks]
    out = [0] * len(marks)
    for name, start, dur in events:
        if name == CACHE_LOOKUP:
            i = bisect.bisect_right(starts, start) - 1
            if i >= 0 and start <= marks[i][1]:
                out[i] += dur
    return out


def cost(guard_ns: list[int], lookups: int) -> dict:
    """Median and mean guard-evaluation seconds per call (None when no lookup was seen)."""
    per_call = [ns * 1e-9 for ns in guard_ns]
    seen = lookups > 0 and bool(per_call)
    return {
        "overhead_s_per_call": statistics.median(per_call) if seen else None,
        "overhead_mean_s_per_call": statistics.fmean(per_call) if seen else None,
    }
