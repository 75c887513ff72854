"""Pristine state: what build() returned, before any call, handed out as identical fresh copies.

Models change as they run: a scheduler decays the learning rate, BatchNorm moves its running
statistics, caches and counters grow, an optimizer steps. A figure taken from a model that earlier
phases have already called thousands of times describes a different model: numerics would
compare outputs from two points in its life, and a recompile sequence fed after the timing loop
may no longer change anything. So every consumer (each side of a numerics comparison, the
recompile sequence, each strategy) gets its own deep copy of the workload as build() returned it.
Where a deep copy fails, build() is called again for each copy (with the RNG reset first, so its
random weights are the same), and the report says so.

RNG: before every compared call all generators are reset as PyTorch's accuracy harness does
(`torch._dynamo.testing.reset_rng_state`: torch, CUDA, Python `random`, NumPy when importable).
"""

from __future__ import annotations

import copy
import random
from typing import Any, Callable

import torch

RNG_SEED = 1337  # the harness's seed


def reset_rng_state() -> None:
    """Seed torch (and CUDA), Python's random and NumPy, as torch._dynamo.testing.reset_rng_state does."""
    try:
        from torch._dynamo.testing import reset_rng_state as harness_reset

        harness_reset()
        return
    except Exception:  # noqa: BLE001 - private API; do what it does
        pass
    torch.manual_seed(RNG_SEED)
    random.seed(RNG_SEED)
    try:
        import numpy

        numpy.random.seed(RNG_SEED)
    except ImportError:
        pass


class Pristine:
    """Fresh copies of a workload in the state build() returned, taken before any call."""

    def __init__(self, workload: Any, rebuild: Callable[[], Any] | None = None):
        self._rebuild = rebuild
        self._snapshot: Any = None
        self.shared = False
        try:
            self._snapshot = copy.deepcopy(workload)
            self.method = "deep copy of what build() returned, taken before any call"
        except Exception as exc:  # noqa: BLE001 - any object may refuse to be copied
            why = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"[:300]
            if rebuild is not None:
                self.method = f"build() called again (RNG reset first) for each fresh copy: deep copy failed ({why})"
            else:
                self._snapshot, self.shared = workload, True
                self.method = f"NOT pristine: deep copy failed ({why}) and build() cannot be re-run here; calls share one model"

    def fresh(self) -> Any:
        if self.shared:
            return self._snapshot
        if self._snapshot is None:
            reset_rng_state()
            return self._rebuild()  # type: ignore[misc]
        return copy.deepcopy(self._snapshot)
