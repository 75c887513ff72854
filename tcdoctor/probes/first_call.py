"""The compiled model's first call: wall time, its breakdown by compiler phase, guards, cache hits.

Phases come from CompilationMetrics, whose times nest within one forward entry: entire frame ⊃
backend ⊃ inductor ⊃ code generation, so Dynamo = frame − backend, AOTAutograd = backend −
inductor, and so on. Backward graphs are separate entries (see `_entry_phases`).
"""

from __future__ import annotations

import os
from typing import Any, Callable

import torch

from ..target.userframes import is_user_file, readable_function
from . import dynamo_state, memory
from .calls import timed_call
from .rss import RssPeak


def compile_args(backend: str, mode: str | None, compile_kwargs: dict) -> dict:
    """torch.compile's keyword arguments: the workload's own, then the analysis's backend and mode
    where it gave none (the default backend and mode left out, as a user writes the call)."""
    kwargs = dict(compile_kwargs)
    if backend != "inductor":
        kwargs.setdefault("backend", backend)
    if mode and mode != "default":
        kwargs.setdefault("mode", mode)
    return kwargs


def build(model: Any, backend: str, mode: str | None, compile_kwargs: dict) -> Any:
    return torch.compile(model, **compile_args(backend, mode, compile_kwargs))


_WRAPPERS = {"_wrapped_call_impl", "_call_impl", "__call__", "forward", "?"}


def function_name(metric: Any, label: str) -> str:
    """The user's function; torch.compile(module) reports torch's own wrapper, so name the subject instead."""
    filename = getattr(metric, "co_filename", None) or ""
    name = getattr(metric, "co_name", None) or "?"
    if is_user_file(filename):
        return f"{readable_function(name)} ({os.path.basename(filename)}:{getattr(metric, 'co_firstlineno', '?')})"
    wrapper = (
        name in _WRAPPERS
        or os.path.basename(filename) == "module.py"
        or f"{os.sep}_dynamo{os.sep}" in filename
    )
    if (
        filename and not wrapper
    ):  # a frame of its own in a library (e.g. Adam.step), named for what it is
        return f"{readable_function(name)} ({os.path.basename(filename)}:{getattr(metric, 'co_firstlineno', '?')})"
    return label


def _entry_phases(m: Any) -> dict:
    """One CompilationMetrics entry split into parts that are each >= 0 and add up to its total.

    A forward entry nests: entire frame ⊃ backend (AOTAutograd) ⊃ inductor ⊃ code generation.
    A backward graph is compiled in an entry of its own (no frame, no backend time: it is compiled
    when the first backward runs), so its inductor time is a part of its own, never subtracted
    from a forward frame: subtracting it is what made AOTAutograd's share negative for training.

    Pitfall: PyTorch fills the inner three from *cumulative* columns (`dynamo_timed` adds each
    timed region's duration to its column), so a region entered twice within one compile counts
    twice and an inner column can exceed the one that contains it. Each is bounded by its
    container (inductor ≤ backend ≤ frame; a backward entry by its own `duration_us`), so an
    entry's parts never add up to more than the time the entry took.
    """
    frame = getattr(m, "entire_frame_compile_time_s", None)
    forward = frame is not None
    backend = getattr(m, "backend_compile_time_s", None) or 0.0
    inductor = getattr(m, "inductor_compile_time_s", None) or 0.0
    codegen = getattr(m, "code_gen_time_s", None) or 0.0
    if forward:
        backend = min(backend, frame)
        inductor = min(inductor, backend) if backend else min(inductor, frame)
    else:
        duration = getattr(m, "duration_us", None)
        if duration:
            inductor = min(inductor, duration / 1e6)
    codegen = min(codegen, inductor) if inductor else codegen
    outer = frame if forward else max(inductor, codegen)
    parts = {
        "codegen_and_cpp_or_triton_s": codegen,
        "inductor_lowering_s": max(0.0, inductor - codegen),
        "aot_autograd_s": max(0.0, backend - max(inductor, codegen)),
        "dynamo_s": max(0.0, (outer or 0.0) - max(backend, inductor, codegen)),
    }
    return {"forward": forward, "parts": parts}


def _interval(m: Any) -> tuple[int, int] | None:
    start, end = getattr(m, "start_time_us", None), getattr(m, "end_time_us", None)
    return (start, end) if start is not None and end is not None and end >= start else None


def concurrent(ms: list) -> list:
    """The entries whose time lies inside another entry's (start_time_us..end_time_us): compiles
    made while another was under way, which one thread cannot do (Dynamo compiles a thread's frames
    one after another, and a backward graph after its forward): another thread's. Their seconds
    are already wall time of the entry they lie in; added to it, the parts of a first call would
    add up to more than the call took."""
    spans = [(_interval(m), m) for m in ms]
    out = []
    for i, (span, m) in enumerate(spans):
        if span is None:
            continue
        inside = any(
            j != i
            and other is not None
            and other[0] <= span[0]
            and span[1] <= other[1]
            and other != span
            for j, (other, _) in enumerate(spans)
        )
        if inside:
            out.append(m)
    return out


def phase_breakdown(ms: list) -> dict:
    """Compile time by compiler phase, summed over the entries of one call; parts add up to the
    total. Entries compiled concurrently inside another's time (`concurrent`) are left out."""
    out: dict = {
        k: 0.0
        for k in (
            "dynamo_s",
            "aot_autograd_s",
            "inductor_lowering_s",
            "codegen_and_cpp_or_triton_s",
        )
    }
    backward = 0.0
    inside = concurrent(ms)
    counted = [m for m in ms if all(m is not c for c in inside)]
    for m in counted:
        e = _entry_phases(m)
        for k, v in e["parts"].items():
            out[k] += v
        if not e["forward"]:
            backward += sum(e["parts"].values())
    out["total_compile_s"] = sum(out.values()) if ms else None
    out["backward_graphs_s"] = backward
    return out


PHASES_METHOD = (
    "CompilationMetrics per entry: Dynamo = frame - backend, AOTAutograd = backend - inductor, "
    "Inductor lowering = inductor - codegen; backward graphs (compiled at the first backward) are "
    "entries of their own, counted once (backward_graphs_s is part of the other four); each part "
    "bounded by the one containing it (PyTorch's columns are cumulative); only the call's own "
    "compile entries: an entry lying inside another's time or begun before the call (another "
    "thread's compile) left out, and PyTorch's runtime entries (Inductor time spent outside any "
    "compile, recorded at a later graph's first run) are not compiles; "
    "dynamo_s + aot_autograd_s + inductor_lowering_s + codegen_and_cpp_or_triton_s = total_compile_s"
)


def _left_out(ms: list, began_before: list) -> str:
    n, m = len(concurrent(ms)), len(began_before)
    said = [f"{n} entries compiled inside another's time"] if n else []
    said += [f"{m} entries begun before the call (another thread's)"] if m else []
    return f" (here {' and '.join(said)}, left out)" if said else ""


def cache_counters() -> dict:
    return {
        "fxgraph_cache_hit": dynamo_state.counter("inductor", "fxgraph_cache_hit"),
        "fxgraph_cache_miss": dynamo_state.counter("inductor", "fxgraph_cache_miss"),
        "autograd_cache_hit": dynamo_state.counter("aot_autograd", "autograd_cache_hit"),
        "autograd_cache_miss": dynamo_state.counter("aot_autograd", "autograd_cache_miss"),
        "cudagraph_skips": dynamo_state.counter("inductor", "cudagraph_skips"),
    }


def native_compile_s() -> float | None:
    """Seconds of gcc / Triton compile jobs, from Dynamo's own `compile_file` timer.

    Jobs run in parallel worker threads while the main thread waits in `async_compile.wait`, so the
    two timers overlap (adding them counted the same seconds twice) and the jobs' sum is work done,
    which can exceed the wall time of the first call; it is never a slice of that wall time.
    """
    try:
        keys, values = torch._dynamo.utils.compile_times(repr="csv", aggregate=True)
    except Exception:  # noqa: BLE001 - private API; absent means "not measured"
        return None
    table = dict(zip(keys, values))
    return float(table["compile_file"]) if "compile_file" in table else None


def first_call(
    call: Callable[[], Any],
    label: str,
    sync: Callable[[], None],
    device: torch.device | None = None,
) -> tuple[Any, dict, list]:
    """Make the compiled model's first call from a fresh state; returns its output, the
    measurements and the call's own compile entries (`dynamo_state.Window`: what later phases read
    as the first call's). Its memory peak: the device allocator's on CUDA, RSS growth elsewhere
    (probes/memory.first_call_peak)."""
    window = dynamo_state.Window()
    device = device if device is not None else torch.device("cpu")
    with RssPeak() as rss:
        if device.type == "cuda":
            with memory.first_call_peak(device) as peak:
                out, wall = timed_call(call, (), sync)
        else:
            peak = {}
            out, wall = timed_call(call, (), sync)
    ms = window.entries()
    breakdown = phase_breakdown(ms)
    frame = breakdown.get("total_compile_s") or 0.0  # within the first call's wall time
    data = {
        "first_call_s": wall,
        "phases": breakdown,
        "phases_method": PHASES_METHOD + _left_out(ms, window.left_out),
        "native_compile_s": native_compile_s(),
        "outside_compiler_s": max(0.0, wall - frame),
        "frames_compiled": len(ms),
        "cache": cache_counters(),
        "peak_rss_delta_bytes": rss.peak_delta,
        "first_call_peak_bytes": peak.get("peak_bytes", rss.peak_delta),
        "first_call_peak_method": memory.first_call_method(device),
        "frames": [
            {
                "compile_id": str(getattr(m, "compile_id", "")),
                "function": function_name(m, label),
                "guard_count": getattr(m, "guard_count", None),
                "compile_s": getattr(m, "entire_frame_compile_time_s", None),
                "fail_type": getattr(m, "fail_type", None),
            }
            for m in ms
        ],
    }
    return out, data, ms
