"""Where a compiled call's extra memory lives: its peak split by the compiled graph that allocated it.

Runs right after the memory phase, in the same process, and only when that phase found the compiled
call's peak above eager's by more than `RULES.memory_growth_fraction` and
`RULES.memory_growth_min_bytes` (tcdoctor/thresholds.py): on a model without growth it calls
nothing and returns the one line the report shows (no profiler, no extra process, no time).

Method (CPU). One compiled call under `torch.profiler.profile(profile_memory=True)`, read from the
raw event tree (`kineto_results.experimental_event_tree()`): every allocation and free event (size,
pointer, time) and every `Torch-Compiled Region: F/C` event (one per compiled frame, nested: a resume
frame's region runs inside the region of the frame whose graph broke). An allocation belongs to the
innermost region running when it was made. A sweep over the events in time order keeps the bytes
live (allocated in the window and not yet freed); at the call's peak, the bytes still live are
split by owner. So the per-graph figures are the graphs' shares of one instant: they add up to the
call's peak (less what was allocated outside every region), never more, and a buffer one graph
makes and a later graph still holds (kept alive across a graph break) counts for the graph that
allocated it. Each graph's own highest live bytes while it ran (`own_peak_bytes`) is kept beside it;
those do not add up (two graphs may peak at different times).

Pitfalls: the profiled call is another call than the memory phase's, so its peak may differ by a
few allocations: when the shares add up to more than the memory phase's compiled peak, they are
scaled down to it (`scale` says by how much, and the method says so). Frees of tensors allocated
before the window are not counted (their sizes are unknown). CUDA: the allocator keeps one peak for
the whole device, not one per graph, and this build measures none: "not measured on CUDA here".
Compile ids are joined with the cold compile's table (user file and line) in the parent
(`report/attribution.py`); they match while both processes compile the same frames in the same order.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from ..report.sections import Memory
from ..thresholds import RULES
from .break_cost import REGION
from .context import PhaseContext

OUTSIDE = "outside compiled regions"

METHOD = (
    "one compiled call under torch.profiler (profile_memory=True): each allocation is owned by the "
    "innermost 'Torch-Compiled Region: F/C' running when it was made; a graph's bytes = of the bytes "
    "allocated in the call and still live at the call's peak, those it allocated (a buffer kept alive "
    "across a graph break counts for the graph that made it), so the graphs' bytes add up to at most "
    "the compiled peak"
)


def _above(e: int, c: int) -> tuple[bool, int]:
    growth = max(0, int(c) - int(e))
    limit = max(RULES.memory_growth_min_bytes, RULES.memory_growth_fraction * e)
    return growth > limit, growth


def footprints(m: Memory) -> tuple[int | None, int | None, bool]:
    """(eager's, compiled's, whether held memory is in them): each side's footprint (held bytes
    plus its steady peak: `Memory`'s) where both sides' held figures were measured
    (probes/memory.py: a mode that holds a CUDA-graph pool is never smaller than default for a
    small steady peak), else the peaks."""
    e, c = m.eager_footprint_bytes, m.compiled_footprint_bytes
    if e is None or c is None:
        return m.eager_peak_bytes, m.compiled_peak_bytes, False
    return e, c, True


def grew(memory: dict) -> tuple[bool, int | None]:
    """(compiled's footprint above eager's by more than the RULES threshold, the growth in bytes:
    0 when compiled holds and peaks at or below eager, never negative). The footprint is held +
    steady peak (`footprints`), the steady peak alone where held memory was not measured.
    `memory`: the memory phase's result, read as the report's `Memory`."""
    return _grown(Memory.from_dict(memory))


def _grown(m: Memory) -> tuple[bool, int | None]:
    e, c, _ = footprints(m)
    if e is None or c is None:
        return False, None
    return _above(e, c)


def _threshold_text(held: bool) -> str:
    what = "compiled held memory + peak above eager's" if held else "compiled peak above eager's"
    return (
        f"{what} by more than {RULES.memory_growth_fraction:.0%} and "
        f"{RULES.memory_growth_min_bytes // 2**20} MiB (RULES memory_growth_*)"
    )


def phase_memory_graphs(ctx: PhaseContext) -> dict:
    """The phase (ctx: run/runner.py's PhaseRunner), right after the memory phase in its process."""
    memory = ctx.results.get("memory")
    if memory is None:
        return {"not_measured": "the memory phase did not finish"}
    ctx.need_compiled()
    return measure(ctx.compiled_fn, memory, ctx.device)


def measure(compiled: Callable[[], Any], memory: dict, device: torch.device) -> dict:
    """The memory phase's result `memory` and one more compiled call when it shows growth."""
    m = Memory.from_dict(memory)
    grows, growth = _grown(m)
    _, _, held = footprints(m)
    base = {"growth_bytes": growth, "threshold": _threshold_text(held), "held": held}
    if not grows:
        return dict(base, grew=False, method="not attributed: no growth above the threshold")
    # the growth is held memory; a call's peak did not grow
    if not _above(int(m.eager_peak_bytes), int(m.compiled_peak_bytes))[0]:
        return dict(
            base,
            grew=True,
            not_measured=(
                "the growth is memory the compiled side holds between calls "
                f"({_held_text(m)}), not a call's peak: no graph to split it by"
            ),
        )
    if device.type == "cuda":
        return dict(
            base,
            grew=True,
            not_measured="not measured on CUDA here: the allocator keeps one peak per device, "
            "and no per-graph split is implemented for it",
        )
    events, regions = _profiled_events(compiled)
    if events is None:
        return dict(base, grew=True, not_measured="the profiler's event tree is not available")
    out = attribute(events, regions, m.compiled_peak_bytes)
    return dict(base, grew=True, **out)


def _held_text(m: Memory) -> str:
    from .. import units

    pool = m.compiled_pool_bytes
    text = (
        f"{units.nbytes(m.compiled_held_bytes)} held against eager's "
        f"{units.nbytes(m.eager_held_bytes)}"
    )
    return text + (f", of which CUDA graphs' pools {units.nbytes(pool)}" if pool else "")


def _profiled_events(compiled: Callable[[], Any]) -> tuple[list | None, list]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        compiled()
    try:
        tree = prof.profiler.kineto_results.experimental_event_tree()
    except Exception:  # noqa: BLE001 - private API moved
        return None, []
    events: list[tuple[int, int, int]] = []  # (time ns, bytes, pointer)
    regions: list[tuple[str, int, int]] = []  # (compile id, start ns, end ns)
    stack = list(tree)
    while stack:
        node = stack.pop()
        extra = getattr(node, "extra_fields", None)
        if extra is not None and hasattr(extra, "alloc_size"):
            events.append((int(node.start_time_ns), int(extra.alloc_size), int(extra.ptr)))
        elif str(getattr(node, "name", "")).startswith(REGION):
            regions.append((node.name[len(REGION) :], node.start_time_ns, node.end_time_ns))
        stack.extend(getattr(node, "children", []) or [])
    return events, regions


def _owner(t: int, regions: list[tuple[str, int, int]]) -> str:
    """The innermost region running at `t` (the latest-starting one that contains it)."""
    best, start = OUTSIDE, -1
    for cid, s, e in regions:
        if s <= t <= e and s > start:
            best, start = cid, s
    return best


def attribute(
    events: list[tuple[int, int, int]],
    regions: list[tuple[str, int, int]],
    compiled_peak: int | None,
) -> dict:
    """Per-graph shares of the bytes live at the call's peak (see the module's method). Torch-free.

    `events`: (time ns, signed bytes, pointer) of allocations (+) and frees (-); `regions`:
    (compile id, start ns, end ns). Shares above `compiled_peak` are scaled down to it."""
    live: dict[int, tuple[int, str]] = {}  # pointer -> (bytes, owner)
    per_owner: dict[str, int] = {}
    own_peak: dict[str, int] = {}
    total = peak = 0
    at_peak: dict[str, int] = {}
    for t, size, ptr in sorted(events):
        if size > 0:
            owner = _owner(t, regions)
            live[ptr] = (size, owner)
        elif ptr in live:
            size, owner = live.pop(ptr)
            size = -size
        else:
            continue  # a free of a tensor made before the window
        total += size
        per_owner[owner] = per_owner.get(owner, 0) + size
        own_peak[owner] = max(own_peak.get(owner, 0), per_owner[owner])
        if total > peak:
            peak, at_peak = total, dict(per_owner)
    shares = {k: v for k, v in at_peak.items() if v > 0}
    graph_sum = sum(v for k, v in shares.items() if k != OUTSIDE)
    scale = None
    method = METHOD
    if compiled_peak is not None and graph_sum > compiled_peak > 0:
        scale = compiled_peak / graph_sum
        shares = {k: int(v * scale) if k != OUTSIDE else 0 for k, v in shares.items()}
        method += (
            f"; scaled by {scale:.3f} to the memory phase's compiled peak (the profiled call "
            "allocated more than the call that phase measured)"
        )
    graphs = [
        {"compile_id": k, "bytes": v, "own_peak_bytes": own_peak.get(k, 0)}
        for k, v in shares.items()
        if k != OUTSIDE
    ]
    graphs.sort(key=lambda g: -g["bytes"])
    return {
        "graphs": graphs,
        "outside_regions_bytes": shares.get(OUTSIDE, 0),
        "profiled_peak_bytes": peak,
        "scale": scale,
        "method": method,
    }
