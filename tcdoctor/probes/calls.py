"""Where the workload runs, how to call it, and how to read clocks honestly there."""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable

import torch

from ..target.workload import CallArgs, iter_tensors  # noqa: F401 - iter_tensors re-exported for probes


def detect(model: Any, call_args: CallArgs | tuple) -> torch.device:
    for t in iter_tensors(call_args):
        return t.device
    if isinstance(model, torch.nn.Module):
        for p in model.parameters():
            return p.device
    return torch.device("cpu")


def synchronizer(device: torch.device) -> Callable[[], None]:
    """CUDA work is asynchronous: the clock is read only after the stream is drained."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def call(fn: Callable, call_args: CallArgs, spec: Any, device: torch.device | None = None) -> Any:
    """Call as the workload would: no_grad unless grad=True, autocast when the spec asks for it.

    Off the timed path (first calls, numerics, memory, the profile), once per call: plain `with`
    statements, not the ExitStack of `spec.context()`, which measured ~25 µs more per call on HF
    GPT-2. Timed batches hold no_grad instead (`batch_context`, `one_call`).
    """
    if spec.autocasts_call:
        with spec.context(device.type if device is not None else "cpu"):
            return call_args.apply(fn)
    if spec.grad:
        return call_args.apply(fn)
    with torch.no_grad():
        return call_args.apply(fn)


def batch_context(spec: Any) -> Callable[[], contextlib.AbstractContextManager]:
    """no_grad (unless grad=True) for a whole timed batch of back-to-back calls.

    A hand-written timing loop holds `torch.no_grad()` around the loop, and so does PyTorch's
    benchmark harness; entering it per call flips grad mode on and off every call, which measured
    ~8-10 µs per call on HF GPT-2 (about 3% of a compiled call), a fixed cost that lowers the
    measured speedup. timing.measure enters this once per sample.
    """
    return contextlib.nullcontext if spec.grad else torch.no_grad


def one_call(
    fn: Callable, call_args: CallArgs, spec: Any, device: torch.device | None
) -> Callable[[], Any]:
    """One timed call inside a batch held by `batch_context`.

    Autocast, when the workload asks for it, is entered per call, as people call an autocast
    model: its cache of lower-precision weight copies lives for one autocast region, so held across
    a batch, eager would cast its weights once per sample while the compiled graph (casts traced
    in) pays them on every call.
    """
    if not spec.autocasts_call:
        return lambda: call_args.apply(fn)
    device_type, dtype = (device.type if device is not None else "cpu"), spec.autocast

    def autocast_call() -> Any:
        with torch.autocast(device_type, dtype=dtype):
            return call_args.apply(fn)

    return autocast_call


def timed_call(fn: Callable, inputs: tuple, sync: Callable[[], None]) -> tuple[Any, float]:
    sync()
    t0 = time.perf_counter()
    out = fn(*inputs)
    sync()
    return out, time.perf_counter() - t0
