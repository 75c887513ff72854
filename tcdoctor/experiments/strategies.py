"""Compile strategies compared by measurement: modes, training ways, dynamic shapes, regions.

Each strategy runs in its own fresh child process with its own empty inductor cache, because an
in-process recompile hits in-memory caches and would flatter compile times (fixes and the ablation,
whose first call is not compared cold, compile from the main cache: run/launcher.py). What the main
analysis already measured (the default mode, the whole training step, the "automatic" shape setting:
`main_is_automatic`) is reused, never compiled again.

`plan` names the strategies as typed specs (specs.py); `run` runs any experiment spec in its child,
strategy, fix or ablation alike, with the function RUNNERS maps its class to.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from ..options import Options
from ..probes import calls, dynamo_state, first_call
from ..probes.recompiles import describe_call, limit_warnings
from ..report.sections.strategies import CudaGraphs
from ..target.workload import CallArgs, is_state_change
from . import compile_remedies, fixes, proving
from .pair import caller, fresh_copies, main_pair, timed_figures, timed_pair
from .shapes import changing_dims, compare_kwargs, dim_names, mark_dims
from .specs import (
    DYNAMIC_SETTINGS,
    AblationSpec,
    DynamicSpec,
    FixSpec,
    ModeSpec,
    PatchFix,
    PortableCacheSpec,
    RegionalCompileSpec,
    RegionsSpec,
    Spec,
    TrainWaySpec,
)

MIN_SPLIT_BUDGET_S = 0.2  # floor for a budget split across shapes or regions


def plan(
    workload: Any, options: Options, graph_breaks: int | None, auto_region_breaks: int
) -> list[Spec]:
    """Which strategy children the parent should run after the main analysis."""
    out: list[Spec] = [ModeSpec(m) for m in options.modes if m != (options.mode or "default")]
    if workload.kind == "train":
        if options.training_ways:
            out += [TrainWaySpec("model")]
            if workload.optimizer is not None and workload.train_step is None:
                out += [TrainWaySpec("optimizer")]
        return out
    shapes = shape_variants(workload)
    if options.dynamic is not False and shapes:
        reused = main_is_automatic(workload, options)  # its row is the main analysis's
        out += [DynamicSpec(h) for h in DYNAMIC_SETTINGS if not (reused and h == "automatic")]
    auto = (
        options.submodules is None
        and graph_breaks is not None
        and graph_breaks >= auto_region_breaks
    )
    if (options.submodules or auto) and isinstance(workload.model, torch.nn.Module):
        out.append(RegionsSpec(options.depth, automatic=bool(auto and not options.submodules)))
    return out


def main_is_automatic(workload: Any, options: Options) -> bool:
    """Whether the main analysis's recompile sequence is the 'automatic' shape row: the same setting
    (`dynamic` not given: PyTorch's automatic dynamic shapes) and the same calls (the inputs, then
    every variant once, each one a shape variant). Then that row is measured there, in the cold child
    (`automatic_row`), and never compiled again in a child of its own."""
    if options.dynamic is False or workload.kind == "train":
        return False
    if workload.compile_kwargs.get("dynamic") is not None:
        return False
    shapes = shape_variants(workload)
    return bool(shapes) and len(shapes) == len(workload.variants)


def shape_variants(workload: Any) -> list[CallArgs]:
    """Call-argument variants whose tensor shapes differ from the inputs' (state-changing callables excluded)."""
    base = [tuple(t.shape) for t in calls.iter_tensors(workload.call_args)]
    out = []
    for v in workload.variants:
        if is_state_change(v):
            continue
        ca = workload.variant_args(v)
        if [tuple(t.shape) for t in calls.iter_tensors(ca)] != base:
            out.append(ca)
    return out


def run_mode(w: Any, o: Options, mode: str) -> dict:
    """A mode's row. When PyTorch skipped CUDA graphs for every graph of a mode that asks for
    them, the row's note says so with PyTorch's reason (probes/cudagraphs.py): its figures are
    measured, but not those of CUDA graphs, and no recommendation names it."""
    row = main_pair(w, o, o.backend, mode)
    row["name"] = mode
    graphs = row.get("cudagraphs")  # the child's dict (experiments/pair.py)
    note = CudaGraphs.from_dict(graphs).skipped_all if graphs else None
    if note:
        row["note"] = note
    return row


def run_train(w: Any, o: Options, way: str) -> dict:
    from .training import subjects

    device = calls.detect(w.model, w.call_args)
    fresh = fresh_copies(w, device)
    row = timed_pair(
        lambda: subjects(fresh, way, o.backend, o.mode),
        w,
        f"train step ({way})",
        o.budget_s,
        device,
        o,
        o.backend,
        mode=o.mode,
    )
    row["name"] = way
    return row


def dynamic_row(
    w: Any,
    o: Options,
    how: str,
    eager: Any,
    compiled: Any,
    ms: list,
    first_pass_s: float,
    limit_hit: bool,
) -> dict:
    """One shape setting's row once the inputs and each shape variant were fed once (`ms`: the
    CompilationMetrics entries of that pass): its compiles, then each shape timed eager vs compiled."""
    device = calls.detect(w.model, w.call_args)
    sync = calls.synchronizer(device)
    shapes = [w.call_args] + shape_variants(w)
    budget = max(MIN_SPLIT_BUDGET_S, o.budget_s / len(shapes))
    per_shape = []
    for s in shapes:
        figures, _ = timed_figures(eager, compiled, s, w, device, sync, budget)
        per_shape.append({"inputs": describe_call(s), **figures})
    return {
        "name": how,
        "changing_dims": dim_names(w.call_args, changing_dims(shapes)),
        "compile_kwargs": {k: repr(v) for k, v in dynamic_kwargs(w, how).items()},
        "compiles": len(ms),
        "recompiles": sum(1 for m in ms if getattr(m, "recompile_reason", None)),
        "compile_s": sum(getattr(m, "entire_frame_compile_time_s", 0) or 0 for m in ms),
        "first_pass_wall_s": first_pass_s,
        "limit_hit": limit_hit,
        "shapes": per_shape,
        "method": f"inputs then {len(shapes) - 1} shape variant(s) once each (compiles counted from CompilationMetrics), then each shape timed eager vs compiled",
    }


def dynamic_kwargs(w: Any, how: str) -> dict:
    """The workload's compile arguments with `dynamic` as shape setting `how` sets it (shapes.py
    `compare_kwargs`: "automatic" not given, PyTorch's default; "marked" None, with mark_dynamic
    on the changing dims)."""
    return compare_kwargs(w.compile_kwargs, how)


def run_dynamic(w: Any, o: Options, how: str) -> dict:
    """Feed inputs then each shape variant once, count compiles; then time each shape in the steady state."""
    kwargs = dynamic_kwargs(w, how)
    device = calls.detect(w.model, w.call_args)
    w.device_type = device.type
    sync, call = calls.synchronizer(device), caller(w, device)
    shapes = [w.call_args] + shape_variants(w)
    if how == "marked":  # exactly the dimensions that change, on every shape, before its first call
        dims = changing_dims(shapes)
        for v in shapes:
            mark_dims(v, dims)
    dynamo_state.fresh()
    compiled = first_call.build(w.model, o.backend, o.mode, kwargs)
    t0 = time.perf_counter()
    with dynamo_state.dynamo_logs() as logs:
        for s in shapes:
            call(compiled, s)
        sync()
    first_pass = time.perf_counter() - t0
    limit_hit = bool(limit_warnings(dynamo_state.warnings(logs)))
    return dynamic_row(
        w,
        o,
        how,
        w.model,
        compiled,
        dynamo_state.compilation_metrics(),
        first_pass,
        limit_hit,
    )


def _regions(model: torch.nn.Module, depth: int) -> list[tuple[str, torch.nn.Module]]:
    level = [("", model)]
    for _ in range(depth):
        level = [(f"{p}.{n}" if p else n, c) for p, m in level for n, c in m.named_children()]
    return level


def run_regions(w: Any, o: Options, depth: int) -> dict:
    """Per-region fullgraph check and eager-vs-compiled time on the inputs each region really gets."""
    model, device = w.model, calls.detect(w.model, w.call_args)
    w.device_type = device.type
    sync, call = calls.synchronizer(device), caller(w, device)
    regions = _regions(model, depth)
    seen: dict[str, dict] = {}
    hooks = []
    for name, mod in regions:

        def pre(m, args, kwargs, name=name):
            rec = seen.setdefault(name, {"calls": 0})
            rec["calls"] += 1
            rec.setdefault("args", args)
            rec.setdefault("kwargs", kwargs)

        hooks.append(mod.register_forward_pre_hook(pre, with_kwargs=True))
    try:
        call(model, w.call_args)
    finally:
        for h in hooks:
            h.remove()
    rows = []
    budget = max(MIN_SPLIT_BUDGET_S, o.budget_s / max(1, len(regions)))
    for name, mod in regions:
        rec = seen.get(name)
        row: dict = {
            "name": name,
            "module": type(mod).__name__,
            "calls_per_forward": rec["calls"] if rec else 0,
            "parameters": sum(p.numel() for p in mod.parameters()),
        }
        if not rec:
            row["fullgraph"] = None
            row["note"] = "not called during the forward"
            rows.append(row)
            continue
        args, kwargs = rec["args"], rec["kwargs"]
        dynamo_state.fresh()
        compiled = first_call.build(mod, o.backend, o.mode, {**w.compile_kwargs, "fullgraph": True})
        fn_c = lambda c=compiled, a=args, k=kwargs: call(c, CallArgs(a, k))  # noqa: E731
        try:
            _, first = calls.timed_call(fn_c, (), sync)
            row["fullgraph"], row["compile_s"] = True, first
        except Exception as exc:  # noqa: BLE001 - a region that does not compile fullgraph is the finding
            row["fullgraph"] = False
            row["why"] = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"[:500]
            rows.append(row)
            continue
        figures, _ = timed_figures(mod, compiled, CallArgs(args, kwargs), w, device, sync, budget)
        row.update(figures)
        rows.append(row)
    dynamo_state.fresh()
    return {
        "depth": depth,
        "regions": rows,
        "method": "each region compiled alone with fullgraph=True on the inputs it received in one eager forward; timed eager vs compiled, paired",
    }


# The function that measures each spec class (a fix kind: FixSpec's, found through the class's MRO).
RUNNERS: dict[type[Spec], Callable[[Any, Any, Options], dict]] = {
    ModeSpec: lambda s, w, o: run_mode(w, o, s.mode),
    TrainWaySpec: lambda s, w, o: run_train(w, o, s.way),
    DynamicSpec: lambda s, w, o: run_dynamic(w, o, s.how),
    RegionsSpec: lambda s, w, o: {**run_regions(w, o, s.depth), "automatic": s.automatic},
    AblationSpec: fixes.run_ablation,
    PatchFix: proving.run,  # before FixSpec: the lookup follows the class's MRO
    FixSpec: fixes.run,
    RegionalCompileSpec: compile_remedies.run_regional,
    PortableCacheSpec: compile_remedies.run_portable,
}


def run(spec: Spec, workload: Any, options: Options) -> dict:
    """Run one experiment in this (fresh) child: the row its spec's section of the report shows."""
    runner = next((RUNNERS[c] for c in type(spec).__mro__ if c in RUNNERS), None)
    if runner is None:
        raise ValueError(f"no runner for {type(spec).__name__}: add it to strategies.RUNNERS")
    return runner(spec, workload, options)
