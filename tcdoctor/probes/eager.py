"""The eager phase: the reference call every comparison starts from (fatal when it fails).

One call of a fresh pristine copy with every RNG reset, timed: its output and state are kept for
numerics (`probes/outputs.py`), its wall time is the per-call hint later phases size their
budgets by. In a child the fidelity check (`PhaseRunner.check_copies`) has already made exactly
this call on the copy it checked, so that call is taken instead of a second one.

Pitfall: tcdoctor runs a (model, inputs) workload under torch.no_grad(); a call that fails only
because of that is said so (`NoGradError`), with the one-line fix, instead of the bare error.
"""

from __future__ import annotations

import torch

from ..report.phases import PhaseError
from ..target.pristine import reset_rng_state
from ..target.userframes import describe_exception
from . import calls, memory, outputs
from .context import PhaseContext


class NoGradError(PhaseError):
    """The eager call failed only because tcdoctor ran it under torch.no_grad()."""


def phase_eager(ctx: PhaseContext) -> dict:
    ctx.check_copies()
    checked = ctx.take_checked()
    if checked is not None:  # the fidelity check made this very call: fresh copy, RNG reset
        ctx.eager_subject, out, wall = checked
        peak = ctx.eager_first_call_peak or {}
    else:
        ctx.eager_subject = ctx.fresh()
        reset_rng_state()
        own = ctx.eager_subject.workload.call_args  # the copy's own inputs: pristine until now
        try:
            with memory.first_call_peak(ctx.device) as peak:
                out, wall = calls.timed_call(ctx.call, (ctx.eager_subject.fn, own), ctx.sync)
        except Exception as exc:
            explained = _no_grad_explains(ctx, exc)
            if explained is None:
                raise
            raise explained from exc
    ctx.eager_out = outputs.snapshot(
        out,
        ctx.eager_subject.fn,
        ctx.pristine_fn,
        (ctx.eager_subject.workload.call_args, ctx.pristine_inputs()),
    )
    ctx.per_call_s = ctx.per_call_s or wall
    return {
        "first_call_s": wall,
        "outputs": len(ctx.eager_out),
        "tensor_outputs": outputs.tensor_leaves(ctx.eager_out),
        "step_form": getattr(ctx.workload, "step_form", None),  # strategies.step_form
        "first_call_peak_bytes": peak.get("peak_bytes"),
        "first_call_peak_method": memory.first_call_method(ctx.device),
    }


def _no_grad_explains(ctx: PhaseContext, exc: Exception) -> NoGradError | None:
    """If the call works with gradients on, the failure is tcdoctor's no_grad default: say so."""
    if ctx.workload.grad:
        return None
    subject = ctx.fresh()
    try:
        with torch.enable_grad(), subject.workload.forward_context():
            ctx.workload.call_args.apply(subject.fn)
    except Exception:  # noqa: BLE001 - it fails either way: the original error stands
        return None
    d = describe_exception(exc)
    return NoGradError(
        f"{d['message']} — tcdoctor ran this call under torch.no_grad() (the default for (model, inputs)), and it "
        "succeeds with gradients enabled: return tcdoctor.Workload(model, inputs, grad=True), or a "
        "tcdoctor.TrainStep for a training step",
        d["where"],
    )
