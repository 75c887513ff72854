"""Random numbers in numerics: does the model draw them, and the compiled side compiled again so
that both sides draw the same ones.

Each side of the comparison is one call on its own pristine copy with every RNG reset first
(`target.pristine.reset_rng_state`). Backends that call eager's RNG ops as they are (eager,
aot_eager) then draw the same numbers. Inductor draws random numbers with its own kernels, so for
a model that draws torch random numbers inside the compiled region (dropout, `torch.rand`), the
compiled side must be compiled once more with `torch._inductor.config.fallback_random = True`, as
the harness's accuracy mode does (a run of its own there): Inductor then calls eager's RNG ops and
still runs its own kernels for everything else. That compile costs about as much as the cold
compile (16 s of a 74 s analysis on HF BERT's train step), so it runs only when asked
(`--fallback-random`); otherwise numerics of a random model are "not measured (why)", never
compared across two RNG streams. When it runs, its cost is reported.

Pitfall: whether a model draws random numbers is found by two eager calls on pristine copies that
differ only in torch's seed; a model that draws numbers only on some inputs is judged on these.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from .outputs import Leaves, snapshot

RNG_EXACT_BACKENDS = ("eager", "aot_eager")  # backends that call eager's RNG ops as they are


def draws_random(call_with_seed: Callable[[int], Leaves]) -> bool:
    """True if two eager calls on pristine copies differ when only torch's seed differs."""
    a, b = call_with_seed(1), call_with_seed(2)
    for (_, x), (_, y) in zip(a, b):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or not bool(((x == y) | (x != x) & (y != y)).all()):
                return True
    return len(a) != len(b)


def needs_fallback_random(backend: str) -> bool:
    return backend not in RNG_EXACT_BACKENDS


RANDOM_NOT_COMPARED = (
    "the model draws random numbers and Inductor draws them with its own kernels, so compiled and "
    "eager outputs differ by design; comparing them needs a second compile with Inductor's "
    "fallback_random=True, about as long as the cold compile: --fallback-random runs it"
)


def rng_check(
    backend: str, eager_on_fresh_copy: Callable[[], Any], compare_random: bool = False
) -> dict:
    """Does the model draw torch random numbers? Matters only for backends with RNG of their own.

    `eager_on_fresh_copy()` makes one eager call on a new pristine copy (RNG reset by the caller
    of this function between the two seeds, so only torch's seed differs). `fallback_random` in
    the result says whether the compiled side is to be compiled again for the comparison
    (`compare_random`, the --fallback-random option); see `random_not_compared`.
    """
    if not needs_fallback_random(backend):
        return {
            "stochastic": None,
            "fallback_random": False,
            "method": f"backend {backend!r} calls eager's RNG ops: same seed, same numbers",
        }
    from ..target.pristine import reset_rng_state

    def with_seed(seed: int) -> Leaves:
        reset_rng_state()
        torch.manual_seed(seed)
        return snapshot(eager_on_fresh_copy())

    t0 = time.perf_counter()
    stochastic = draws_random(with_seed)
    return {
        "stochastic": stochastic,
        "fallback_random": stochastic and compare_random,
        "check_s": time.perf_counter() - t0,
        "method": "two eager calls on pristine copies differing only in torch's seed "
        + (
            "differ: the model draws random numbers" if stochastic else "agree: no torch randomness"
        ),
    }


def random_not_compared(rng: dict) -> str | None:
    """Why a random model's outputs were not compared (no fallback_random compile), else None."""
    return RANDOM_NOT_COMPARED if rng.get("stochastic") and not rng["fallback_random"] else None


def fallback_random_output(compiled_on_fresh_copy: Callable[[], Any], rng: dict) -> Leaves:
    """The compiled side again, compiled with fallback_random=True (the harness's accuracy mode).

    `compiled_on_fresh_copy()` compiles a new pristine copy and makes its first call; Dynamo's state
    is reset before (so nothing is reused from the timed compile) and after.
    """
    import torch._inductor.config as inductor_config

    from ..target.pristine import reset_rng_state
    from . import dynamo_state

    dynamo_state.fresh()
    t0 = time.perf_counter()
    with inductor_config.patch(fallback_random=True):
        reset_rng_state()
        out = snapshot(compiled_on_fresh_copy())
    rng["extra_compile_s"] = time.perf_counter() - t0
    rng["method"] += (
        "; so the compiled side was compiled once more with torch._inductor.config.fallback_random=True "
        "(Inductor calls eager's RNG ops, its own kernels for the rest), as PyTorch's accuracy harness "
        f"does: that compile and call took {rng['extra_compile_s']:.2f} s"
    )
    dynamo_state.fresh()
    return out
