"""The compiled model's first call: wall time, its breakdown by compiler phase, guards, cache hits.

Phases come from CompilationMetrics, whose times nest: entire frame ⊃ backend ⊃ inductor ⊃
code generation, so Dynamo = frame − backend, AOTAutograd = backend − inductor, and so on.
"""
from __future__ import annotations

import os
from typing import Any, Callable

import torch

from ..userframes import is_user_file, readable_function
from . import dynamo_state
from .device import timed_call
from .rss import RssPeak


def build(model: Any, backend: str, mode: str | None, compile_kwargs: dict) -> Any:
    kwargs = dict(compile_kwargs)
    kwargs.setdefault("backend", backend)
    if mode and mode != "default":
        kwargs.setdefault("mode", mode)
    return torch.compile(model, **kwargs)


def _sum(ms: list, field: str) -> float | None:
    vals = [getattr(m, field, None) for m in ms]
    vals = [v for v in vals if v is not None]
    return float(sum(vals)) if vals else None


def function_name(metric: Any, label: str) -> str:
    """The user's function; torch.compile(module) reports torch's own wrapper, so name the subject instead."""
    filename = getattr(metric, "co_filename", None) or ""
    name = getattr(metric, "co_name", None) or "?"
    if is_user_file(filename):
        return f"{readable_function(name)} ({os.path.basename(filename)}:{getattr(metric, 'co_firstlineno', '?')})"
    return label


def phase_breakdown(ms: list) -> dict:
    frame = _sum(ms, "entire_frame_compile_time_s")
    backend = _sum(ms, "backend_compile_time_s")
    inductor = _sum(ms, "inductor_compile_time_s")
    codegen = _sum(ms, "code_gen_time_s")
    out = {"total_compile_s": frame}
    if frame is not None:
        out["dynamo_s"] = frame - (backend or 0.0)
    if backend is not None:
        out["aot_autograd_s"] = backend - (inductor or 0.0) if inductor is not None else backend
    if inductor is not None:
        out["inductor_lowering_s"] = inductor - (codegen or 0.0)
    if codegen is not None:
        out["codegen_and_cpp_or_triton_s"] = codegen
    return out


def cache_counters() -> dict:
    return {
        "fxgraph_cache_hit": dynamo_state.counter("inductor", "fxgraph_cache_hit"),
        "fxgraph_cache_miss": dynamo_state.counter("inductor", "fxgraph_cache_miss"),
        "autograd_cache_hit": dynamo_state.counter("aot_autograd", "autograd_cache_hit"),
        "autograd_cache_miss": dynamo_state.counter("aot_autograd", "autograd_cache_miss"),
        "cudagraph_skips": dynamo_state.counter("inductor", "cudagraph_skips"),
    }


def native_compile_s() -> float | None:
    """Time in gcc / Triton compilation, from Dynamo's own timers (compile_file / async_compile.wait)."""
    try:
        keys, values = torch._dynamo.utils.compile_times(repr="csv", aggregate=True)
    except Exception:  # noqa: BLE001 - private API; absent means "not measured"
        return None
    table = dict(zip(keys, values))
    total = 0.0
    found = False
    for k in ("compile_file", "async_compile.wait"):
        if k in table:
            total += float(table[k])
            found = True
    return total if found else None


def first_call(call: Callable[[], Any], label: str, sync: Callable[[], None]) -> tuple[Any, dict]:
    """Make the compiled model's first call from a fresh state; returns its output and the measurements."""
    n_before = len(dynamo_state.compilation_metrics())
    with RssPeak() as rss:
        out, wall = timed_call(call, (), sync)
    ms = dynamo_state.compilation_metrics()[n_before:]
    breakdown = phase_breakdown(ms)
    frame = breakdown.get("total_compile_s") or 0.0
    data = {
        "first_call_s": wall,
        "phases": breakdown,
        "native_compile_s": native_compile_s(),
        "outside_compiler_s": max(0.0, wall - frame),
        "frames_compiled": len(ms),
        "cache": cache_counters(),
        "peak_rss_delta_bytes": rss.peak_delta,
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
    return out, data


def guards(frames: list[dict]) -> dict:
    counts = [f["guard_count"] for f in frames if f.get("guard_count") is not None]
    return {
        "count": sum(counts) if counts else None,
        "per_frame": [{"function": f["function"], "compile_id": f["compile_id"], "guard_count": f["guard_count"]} for f in frames],
        "source": "CompilationMetrics.guard_count of each frame compiled by the first call",
    }
