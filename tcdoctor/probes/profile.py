"""Profiler view: guard-evaluation cost per compiled call, and top operators eager vs compiled.

Guard evaluation shows as `TorchDynamo Cache Lookup` events; one run of the profiler per
side, separate from the timing run so its overhead never enters the speed figures.
"""
from __future__ import annotations

import os
from typing import Any, Callable

import torch
from torch.profiler import ProfilerActivity, profile

CACHE_LOOKUP = "TorchDynamo Cache Lookup"
COMPILED_REGION = "Torch-Compiled Region"
TOP_N = 15


def _run(fn: Callable[[], Any], calls: int, device: torch.device, trace_path: str | None):
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=acts) as prof:
        for _ in range(calls):
            fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    if trace_path:
        prof.export_chrome_trace(trace_path)
    return prof


def _top(averages, calls: int, device: torch.device) -> list[dict]:
    rows = []
    for e in averages:
        if e.key.startswith("ProfilerStep"):
            continue
        dev = getattr(e, "self_device_time_total", 0) if device.type == "cuda" else 0
        rows.append({
            "name": e.key,
            "self_cpu_us_per_call": e.self_cpu_time_total / calls,
            "self_device_us_per_call": dev / calls if dev else None,
            "count_per_call": e.count / calls,
        })
    key = "self_device_us_per_call" if device.type == "cuda" else "self_cpu_us_per_call"
    rows.sort(key=lambda r: -(r[key] or 0))
    return rows[:TOP_N]


def measure(eager: Callable[[], Any], compiled: Callable[[], Any], device: torch.device, per_call_s: float, trace_dir: str | None) -> dict:
    calls = int(max(5, min(200, 0.1 / max(per_call_s, 1e-7))))
    paths = {}
    if trace_dir:
        os.makedirs(trace_dir, exist_ok=True)
        paths = {k: os.path.join(trace_dir, f"{k}.trace.json") for k in ("eager", "compiled")}
    ea = _run(eager, calls, device, paths.get("eager")).key_averages()  # computed once: it is not cheap
    ca = _run(compiled, calls, device, paths.get("compiled")).key_averages()
    lookups = [e for e in ca if e.key == CACHE_LOOKUP]
    regions = sum(e.count for e in ca if e.key.startswith(COMPILED_REGION))
    lookup_us = sum(e.cpu_time_total for e in lookups)
    lookup_n = sum(e.count for e in lookups)
    return {
        "calls_profiled": calls,
        "guard_overhead_s_per_call": (lookup_us / calls) * 1e-6 if lookup_n else None,
        "cache_lookups_per_call": lookup_n / calls,
        "compiled_regions_per_call": regions / calls,
        "top_ops": {"eager": _top(ea, calls, device), "compiled": _top(ca, calls, device)},
        "traces": paths or None,
        "method": f"torch.profiler over {calls} calls of each (separate from the timing run); guard cost = total '{CACHE_LOOKUP}' time / calls",
    }
