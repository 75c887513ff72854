"""Where the workload runs, how to call it, and how to read clocks honestly there."""
from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterator

import torch


def iter_tensors(obj: Any) -> Iterator[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from iter_tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from iter_tensors(v)


def detect(model: Any, inputs: tuple) -> torch.device:
    for t in iter_tensors(inputs):
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


def grad_context(grad: bool) -> contextlib.AbstractContextManager:
    return contextlib.nullcontext() if grad else torch.no_grad()


def call(fn: Callable, inputs: tuple, grad: bool) -> Any:
    """Call as the workload would: under torch.no_grad() unless it is a gradient workload."""
    with grad_context(grad):
        return fn(*inputs)


def timed_call(fn: Callable, inputs: tuple, sync: Callable[[], None]) -> tuple[Any, float]:
    sync()
    t0 = time.perf_counter()
    out = fn(*inputs)
    sync()
    return out, time.perf_counter() - t0
