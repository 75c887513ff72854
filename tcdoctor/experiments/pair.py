"""The paired measurement every experiment row is made of: a fresh copy compiled with a backend/mode,
its first call, then eager vs compiled timed paired (probes/timing.py), memory and numerics.

`main_pair` is the main subject (the forward, or the whole training step); the strategies, the
fixes and the ablation are each one call of it with something changed.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import torch

from ..options import Options
from ..probes import (
    calls,
    cudagraphs,
    dynamo_state,
    first_call,
    guards,
    memory,
    numerics,
    outputs,
    randomness,
    timing,
)
from ..target.pristine import Pristine, reset_rng_state
from ..target.workload import CallArgs
from ..thresholds import RULES


def caller(spec: Any, device: torch.device) -> Callable[[Any, CallArgs], Any]:
    """call(fn, call_args): one call of `fn` as the workload calls it, on `device`."""
    return lambda fn, ca: calls.call(fn, ca, spec, device)


def fresh_copies(w: Any, device: torch.device) -> Callable[[], Any]:
    """Pristine copies of the workload (each strategy child starts from build(); copies keep it so)."""
    pristine = Pristine(w)

    def fresh() -> Any:
        copy_ = pristine.fresh()
        copy_.device_type = device.type
        return copy_

    return fresh


def question(*against: float | None) -> timing.Question:
    """What a timed row answers (timing.Question): is it faster than eager, than the required
    speedup, and than each figure `against` (the main analysis's speedup, for a tried fix)?"""
    return timing.Question(tuple(sorted({1.0, RULES.min_speedup, *(a for a in against if a)})))


def timed_figures(
    eager: Any,
    compiled: Any,
    ca: CallArgs,
    w: Any,
    device: torch.device,
    sync: Callable[[], None],
    budget_s: float,
    against: float | None = None,
    held: memory.Held | None = None,
) -> tuple[dict, str]:
    """Eager vs compiled on `ca`, paired (timing.measure, until the CI answers `question(against)`
    or the budget ends): the figures every timed row carries, and how they were measured. `held`:
    the compiled copy's held-memory window, closed after its warm-up."""
    rt = timing.measure(
        calls.one_call(eager, ca, w, device),
        calls.one_call(compiled, ca, w, device),
        sync,
        budget_s,
        calls.batch_context(w),
        question(against),
        timing.block_calls(device.type),
        held,
    )
    figures = {
        "eager_median_s": rt["eager"]["median_s"],
        "median_s": rt["compiled"]["median_s"],
        "speedup": rt["speedup"],
        "speedup_ci": rt["speedup_ci"],
        "samples": rt["samples"],
        "calls_per_sample": rt["calls_per_sample"],
        "timing_s": rt["timing_s"],
        "stopped": rt["stopped"],
        "faults_per_call": rt["compiled"].get("minor_faults_per_call"),
    }
    return figures, rt["method"]


def timed_pair(
    make: Callable[[], tuple[Any, Any]],
    w: Any,
    label: str,
    budget_s: float,
    device: torch.device,
    o: Options,
    backend: str,
    after_first_call: Callable[[], None] | None = None,
    against: float | None = None,
    mode: str | None = None,
) -> dict:
    """First call (compile), then paired timing and memory of compiled vs eager on the workload's inputs
    (timed until the CI says where the speedup lies against eager, the required speedup and `against`).

    `make()` returns (eager callable, compiled callable), each on its own pristine copy; numerics
    compare their first calls with every RNG reset (a random model's only with --fallback-random:
    probes/numerics.py), each on its own copy of the inputs as they were before any call (a call
    that changes its inputs in place is judged on them, never fed the other side's changes).
    """
    ca, call, sync = w.call_args, caller(w, device), calls.synchronizer(device)
    pristine_ca = copy.deepcopy(ca)  # before any call of this row

    def own_inputs() -> Any:
        return copy.deepcopy(pristine_ca)

    eager, compiled = make()
    reset_rng_state()
    e_ca = own_inputs()
    e_out = outputs.snapshot(call(eager, e_ca), inputs=(e_ca, pristine_ca))
    dynamo_state.fresh()
    reset_rng_state()
    held = memory.Held(device).start()  # closed after the compiled copy's warm-up (CUDA)
    c_ca = own_inputs()
    with dynamo_state.dynamo_logs() as logs, cudagraphs.capture() as skips:
        c_out, first, entries = first_call.first_call(
            lambda: call(compiled, c_ca), label, sync, device
        )
    graphs = cudagraphs.summary(mode, skips, cudagraphs.metrics_reasons(entries), device.type)
    c_out = outputs.snapshot(c_out, inputs=(c_ca, pristine_ca))
    if after_first_call:
        after_first_call()
    row = {
        "first_call_s": first["first_call_s"],
        "first_call_peak_bytes": first["first_call_peak_bytes"],
        "compile_phases": first["phases"],
        "cache": first["cache"],
        "graph_breaks": len(dynamo_state.graph_break_messages(logs)),
        "frames_compiled": first["frames_compiled"],
        "guards": guards.count(first["frames"])["count"],
        **({"cudagraphs": graphs} if graphs is not None else {}),
    }
    figures, method = timed_figures(eager, compiled, ca, w, device, sync, budget_s, against, held)
    row.update(figures, timing_method=method)
    row.update(_memory_figures(make, eager, compiled, ca, call, device, held))
    row.update(_numerics_figures(make, e_out, c_out, call, own_inputs, pristine_ca, w, o, backend))
    return row


def _memory_figures(
    make: Callable[[], tuple[Any, Any]],
    eager: Any,
    compiled: Any,
    ca: CallArgs,
    call: Callable[[Any, CallArgs], Any],
    device: torch.device,
    held: memory.Held,
) -> dict:
    """A row's memory: each side's steady call's peak, and what each side holds after its warm-up
    (the compiled side's from the `held` window opened before its first call)."""
    mem = memory.measure(lambda: call(eager, ca), lambda: call(compiled, ca), device)
    kept = memory.held(
        device,
        lambda: lambda e=make()[0]: call(e, ca),
        lambda: lambda c=make()[1]: call(c, ca),
        held,
    )
    return {
        "peak_bytes": mem["compiled_peak_bytes"],
        "eager_peak_bytes": mem["eager_peak_bytes"],
        "held_bytes": kept["compiled_held_bytes"],
        "eager_held_bytes": kept["eager_held_bytes"],
    }


def _numerics_figures(
    make: Callable[[], tuple[Any, Any]],
    e_out: Any,
    c_out: Any,
    call: Callable[[Any, CallArgs], Any],
    own_inputs: Callable[[], Any],
    pristine_ca: CallArgs,
    w: Any,
    o: Options,
    backend: str,
) -> dict:
    """A row's numerics: the two first calls' outputs compared, a random model's only with
    --fallback-random (its compiled side called again on a fresh copy: probes/randomness.py)."""
    rng = randomness.rng_check(backend, lambda: call(make()[0], own_inputs()), o.fallback_random)
    why = randomness.random_not_compared(rng)
    if why:
        return {
            "numerics_passed": None,
            "max_abs_err": None,
            "numerics_rng": f"not measured: {why}",
        }
    if rng["fallback_random"]:

        def compiled_again() -> Any:  # a Snapshot: fallback_random_output keeps it as it is
            again = own_inputs()
            return outputs.snapshot(call(make()[1], again), inputs=(again, pristine_ca))

        c_out = randomness.fallback_random_output(compiled_again, rng)
    num = numerics.compare(
        e_out, c_out, None, "strategy comparison: compiled vs eager only", w.autocast
    )
    return {
        "numerics_passed": num["passed"],
        "max_abs_err": num["max_abs_err"],
        "numerics_rng": rng["method"],
    }


def main_pair(
    w: Any,
    o: Options,
    backend: str,
    mode: str | None,
    after_first_call: Callable[[], None] | None = None,
    against: float | None = None,
) -> dict:
    """The main subject (the forward, or the whole training step) compiled with `backend`/`mode` vs
    eager; `against`: the speedup its row is compared with (a tried fix: the main analysis's)."""
    device = calls.detect(w.model, w.call_args)
    fresh = fresh_copies(w, device)
    if w.kind == "train":
        from .training import subjects

        return timed_pair(
            lambda: subjects(fresh, "step", backend, mode),
            w,
            "train step",
            o.budget_s,
            device,
            o,
            backend,
            after_first_call,
            against,
            mode,
        )

    def make() -> tuple[Any, Any]:
        return fresh().model, first_call.build(fresh().model, backend, mode, w.compile_kwargs)

    return timed_pair(
        make, w, "forward", o.budget_s, device, o, backend, after_first_call, against, mode
    )
