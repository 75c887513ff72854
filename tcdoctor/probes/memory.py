"""Memory as the device holds it, per side: the first call's peak, the steady call's peak, and the
memory the side still holds after warm-up, measured from before its first call.

Why three figures. A steady call's peak above what was allocated before it (`peak_of_call`) misses
whatever the side allocated during its first calls and keeps: CUDA graphs' private memory pool
(allocated while PyTorch records the graphs, in the warm-up calls), compiled workspaces, optimizer
state, caches. On an H100, reduce-overhead's steady call peaked at 20 MiB against default's 714 MiB,
while its pool held the rest: the steady peak alone called CUDA graphs 35× smaller than default.
The first call's peak is the benchmark article's "initial step memory" (the compile's own device
memory included); the held figure is what stays between calls; held + steady peak is the side's
footprint while it runs, what memory growth is judged on (probes/memory_graphs.py).

CUDA (the caching allocator's statistics):
- first call: `max_memory_allocated` after `reset_peak_memory_stats`, minus `memory_allocated`
  before the call (`first_call_peak`);
- steady call: the same around one call after warm-up (`peak_of_call`);
- held (`Held`): `memory_allocated` plus the free bytes of private pools (`memory_snapshot`'s
  segments whose pool is not the default one: CUDA graphs' pools, which nothing else may use), from
  before the side's first call to after its warm-up calls. The compiled side's figure comes from
  the copy that made the warm process's first call, stopped after the timing's warm-up of that copy
  (nothing else runs between), or from the timed copy's own first call where that is the first
  (probes/timing.warm_up); the eager side's from a fresh copy's first call and warm-up.
Pitfall: the held figure is a difference of the whole device's counters, so anything else the
process allocates or frees meanwhile lands in it: the windows hold only the side's own calls.

CPU (no allocator statistics in PyTorch): the closest figures that exist.
- first call: growth of the process's RSS during the call, sampled in a thread (the compiler's own
  objects and the kernels it loads included, for the compiled side);
- steady call: the peak of bytes allocated during one call from the profiler's memory events
  (`profile_memory=True`), RSS growth as a cross-check;
- held (`held_by_tensors`): the bytes of the tensors a fresh copy's first call and warm-up calls
  allocated and did not free, from the same events: the side's state (optimizer state, buffers,
  caches), never the compiler's objects or loaded kernels. A fresh compiled copy's first call
  reuses the cache entry the analysis's first call made (same class, same guards): it compiles
  nothing, so this is the held state without the compile.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import torch

from .context import PhaseContext
from .rss import RssPeak

WARM_CALLS = 3  # calls after the first in a held window (CUDA graph trees record in the second)

STEADY_CUDA = (
    "torch.cuda.max_memory_allocated after reset_peak_memory_stats, minus memory_allocated before "
    "the call (one call after warm-up)"
)
STEADY_CPU = (
    "CPU: peak of total bytes allocated during one call from torch.profiler memory events "
    "(profile_memory=True); RSS growth sampled every 0.5 ms in a second call as a cross-check"
)
FIRST_CUDA = (
    "the side's first call: torch.cuda.max_memory_allocated after reset_peak_memory_stats, minus "
    "memory_allocated before it (the compile's own device memory included), the benchmark "
    "article's initial step memory"
)
FIRST_CPU = (
    "CPU: growth of the process RSS during the side's first call, sampled every 2 ms (for the "
    "compiled side the compiler's objects and loaded kernels included; the CPU has no allocator "
    "statistics)"
)
HELD_CUDA = (
    "memory_allocated plus the free bytes of private pools (CUDA graphs' pools, from "
    "torch.cuda.memory_snapshot), after the side's warm-up calls minus before its first call: "
    "the compiled side on the copy that made its first call, the eager side on a fresh copy"
)
HELD_CPU = (
    f"CPU: bytes of the tensors a fresh copy's first call and {WARM_CALLS} more calls allocated and "
    "did not free (torch.profiler memory events): the side's state (optimizer state, buffers, "
    "caches), not the compiler's objects or loaded kernels (the CPU has no allocator statistics); "
    "the compiled copy reuses the cache entry of the analysis's first call"
)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def private_pool_free(device: torch.device) -> int | None:
    """Free bytes held by private memory pools on `device` (CUDA graphs' pools: segments whose
    pool id is not the default (0, 0)); None where the snapshot is not available."""
    try:
        segments = torch.cuda.memory_snapshot()
    except Exception:  # noqa: BLE001 - private layout; absent means "not measured"
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    total = 0
    for seg in segments:
        pool = tuple(seg.get("segment_pool_id") or (0, 0))
        if seg.get("device", index) == index and pool != (0, 0):
            total += int(seg.get("total_size", 0)) - int(seg.get("allocated_size", 0))
    return total


class Held:
    """What a side keeps between calls (CUDA): `start()` before its first call, `stop()` after its
    warm-up calls; `bytes` = the growth of allocated memory plus private pools' free bytes, ≥ 0,
    and `pool_bytes` = the private pools' share. Off the CPU's path: both stay None there."""

    def __init__(self, device: torch.device):
        self.device = device
        self.bytes: int | None = None
        self.pool_bytes: int | None = None
        self._before: tuple[int, int] | None = None

    def _now(self) -> tuple[int, int] | None:
        if self.device.type != "cuda":
            return None
        _sync(self.device)
        pool = private_pool_free(self.device)
        return torch.cuda.memory_allocated(self.device), pool if pool is not None else 0

    def start(self) -> Held:
        self._before = self._now()
        return self

    @property
    def started(self) -> bool:
        return self._before is not None

    def stop(self) -> None:
        """Once: a second stop (another warm-up of the same copy) keeps the first figure."""
        now = self._now()
        if self._before is None or now is None or self.bytes is not None:
            return
        self.pool_bytes = max(0, now[1] - self._before[1])
        self.bytes = max(0, now[0] - self._before[0] + self.pool_bytes)


@contextlib.contextmanager
def first_call_peak(device: torch.device) -> Iterator[dict]:
    """Around a side's first call: yields a dict that holds {"peak_bytes"} after the block."""
    out: dict = {}
    if device.type == "cuda":
        _sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        yield out
        _sync(device)
        out["peak_bytes"] = max(0, torch.cuda.max_memory_allocated(device) - base)
        return
    with RssPeak() as rss:
        yield out
    out["peak_bytes"] = rss.peak_delta


def first_call_method(device: torch.device) -> str:
    return FIRST_CUDA if device.type == "cuda" else FIRST_CPU


def _memory_events(fn: Callable[[], Any]) -> list | None:
    """The profiler's raw event tree over `fn()` (profile_memory=True), or None (private API)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    try:
        return list(prof.profiler.kineto_results.experimental_event_tree())
    except Exception:  # noqa: BLE001 - private API; fall back
        return None


def _walk(tree: list) -> Iterator[Any]:
    stack = list(tree)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(getattr(node, "children", []) or [])


def _profiler_peak(fn: Callable[[], Any]) -> int | None:
    tree = _memory_events(fn)
    if tree is None:
        return None
    peak = 0
    for node in _walk(tree):
        total = getattr(getattr(node, "extra_fields", None), "total_allocated", None)
        if total is not None:
            peak = max(peak, int(total))
    return peak


def still_allocated(events: list[tuple[int, int, int]]) -> int:
    """Bytes allocated in a window and not freed by its end, from (time ns, signed bytes, pointer)
    events: frees of tensors allocated before the window are not counted. Torch-free."""
    live: dict[int, int] = {}
    for _t, size, ptr in sorted(events):
        if size > 0:
            live[ptr] = size
        else:
            live.pop(ptr, None)
    return sum(live.values())


def held_by_tensors(calls: Callable[[], Any]) -> int | None:
    """CPU: bytes `calls()` allocated and did not free (the module docstring), None where the
    profiler's event tree is not available."""
    tree = _memory_events(calls)
    if tree is None:
        return None
    events = []
    for node in _walk(tree):
        extra = getattr(node, "extra_fields", None)
        if extra is not None and hasattr(extra, "alloc_size"):
            events.append((int(node.start_time_ns), int(extra.alloc_size), int(extra.ptr)))
    return still_allocated(events)


def side_sequence(call: Callable[[], Any]) -> Callable[[], None]:
    """A fresh copy's first call and WARM_CALLS more, outputs dropped: the held window's calls."""

    def run() -> None:
        for _ in range(1 + WARM_CALLS):
            call()

    return run


def peak_of_call(fn: Callable[[], Any], device: torch.device) -> dict:
    if device.type == "cuda":
        _sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        fn()
        _sync(device)
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
    """The steady call's peak of each side, after warm-up."""
    e = peak_of_call(eager, device)
    c = peak_of_call(compiled, device)
    return {
        "eager_peak_bytes": e["peak_bytes"],
        "compiled_peak_bytes": c["peak_bytes"],
        "ratio": (c["peak_bytes"] / e["peak_bytes"]) if e["peak_bytes"] else None,
        "eager": e,
        "compiled": c,
        "method": STEADY_CUDA if device.type == "cuda" else STEADY_CPU,
    }


def held(
    device: torch.device,
    eager_copy: Callable[[], Callable[[], Any]],
    compiled_copy: Callable[[], Callable[[], Any]],
    compiled_held: Held | None,
) -> dict:
    """What each side holds after warm-up (the module docstring). `eager_copy()` /
    `compiled_copy()` make a fresh copy and return its one-call callable; `compiled_held` is the
    compiled side's window where the caller opened one on CUDA (None: not measured)."""
    if device.type == "cuda":
        run = side_sequence(eager_copy())  # the copy made before the window opens
        eager = Held(device).start()
        run()
        eager.stop()
        c = compiled_held if compiled_held is not None and compiled_held.bytes is not None else None
        return {
            "eager_held_bytes": eager.bytes,
            "compiled_held_bytes": c.bytes if c else None,
            "compiled_pool_bytes": c.pool_bytes if c else None,
            "held_method": HELD_CUDA,
            **({} if c else {"held_not_measured": "the compiled copy's window was not opened"}),
        }
    compiled, why = _held_without_recompiling(compiled_copy)
    return {
        "eager_held_bytes": held_by_tensors(side_sequence(eager_copy())),
        "compiled_held_bytes": compiled,
        "held_method": HELD_CPU,
        **({"held_not_measured": why} if why else {}),
    }


def _held_without_recompiling(compiled_copy: Callable[[], Callable[[], Any]]) -> tuple:
    """(the fresh compiled copy's held bytes, None), or (None, why) where that copy would compile
    again (guards on an object's identity, e.g. a T5's config): its compile would add a cache entry
    that the later phases count (the guard A/B needs exactly one), so it is refused by
    `set_stance("fail_on_recompile")` and the figure is not measured."""
    try:
        with torch.compiler.set_stance("fail_on_recompile"):
            return held_by_tensors(side_sequence(compiled_copy())), None
    except Exception as exc:  # noqa: BLE001 - the recompile refused, or the user's call failed
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        return None, (
            "the compiled side on the CPU is measured on a fresh copy that reuses the first "
            f"call's cache entry, and this one would compile again ({first})"
        )


def phase_memory(ctx: PhaseContext) -> dict:
    """The memory phase (ctx: the run.runner.PhaseRunner): each side's steady call's peak, then
    what each side holds after warm-up (fresh copies on the CPU; on CUDA the compiled copy's
    window opened before its first call, `ctx.held`)."""
    ctx.need_compiled()
    out = measure(ctx.eager_fn, ctx.compiled_fn, ctx.device)

    def eager_copy() -> Callable[[], Any]:
        s = ctx.fresh()
        return lambda: ctx.call(s.fn)

    def compiled_copy() -> Callable[[], Any]:
        c = ctx.torch_compile(ctx.fresh())
        return lambda: ctx.call(c)

    out.update(held(ctx.device, eager_copy, compiled_copy, ctx.held))
    return out
