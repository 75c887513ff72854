"""Proof "helper-op" (TCD106): a NumPy round-trip helper wrapped whole in a custom op is the same
function, eager and compiled, with the same gradients.

Method, on the arguments the helper got in the workload's call and in every input variant (the
eager run observed them, `ProofContext.observations`):
- `torch.library.opcheck` on each (custom_op.py's check: schema, fake against the real kernel,
  autograd registration, dynamic shapes);
- the op against the original helper, called directly on the same arguments with every floating
  tensor argument requiring grad: outputs equal by the numerics rule, and the output's
  `requires_grad` the original's (the op marks its output non-differentiable as the original's
  NumPy-made output is; an op without that registration returns an output that requires grad,
  and its backward raises);
- the model's parameter gradients of the outputs' sum, patched vs original, on each call (as the
  branch proof compares them; an inference workload: a training step's are compared by "eager
  outputs" already);
- the patched copy compiled with aot_eager (the fake traced) against its eager outputs on every
  variant (custom_op.py's check).

Pitfall: a helper that reads `x.numpy()` without `.detach()` raises on an argument that requires
grad; the original and the op are then compared on the arguments as observed, and the detail
says so.
"""

from __future__ import annotations

from typing import Any

from ...rewrite.helper_op import PROOF
from .. import sandbox
from ..plan import first_line
from . import custom_op
from .branches import grads_differ
from .context import Checks, ProofContext

__all__ = ["PROOF", "prove"]


def _requiring_grad(args: tuple) -> tuple:
    import torch

    return tuple(
        a.detach().clone().requires_grad_(True)
        if isinstance(a, torch.Tensor) and a.is_floating_point()
        else a
        for a in args
    )


def _against_original(
    original: Any, op: Any, args: tuple, autocast: Any
) -> tuple[str | None, bool]:
    """(what differs, None when nothing does; whether the arguments required grad)."""
    from ....probes import outputs

    grad_args, with_grad = _requiring_grad(args), True
    try:
        want = original(*grad_args)
    except Exception:  # noqa: BLE001 - `x.numpy()` without .detach() raises on such inputs
        grad_args, with_grad = args, False
        want = original(*args)
    try:
        got = op(*grad_args)
    except Exception as exc:  # noqa: BLE001 - an op that fails where the helper runs is the finding
        return f"the op raises {type(exc).__name__}: {first_line(str(exc))[:120]}", with_grad
    w_grad, g_grad = getattr(want, "requires_grad", None), getattr(got, "requires_grad", None)
    if w_grad != g_grad:
        return f"the op's output requires_grad={g_grad}, the helper's {w_grad}", with_grad
    same = sandbox.same(outputs.snapshot(want), outputs.snapshot(got), autocast, "op vs helper")
    return (None if same["passed"] is True else "outputs differ"), with_grad


def _helper_check(ctx: ProofContext, op: Any) -> Checks:
    """The op against the original helper on every call's observed arguments."""
    name = ctx.planned.payload.function
    original = getattr(ctx.original, name, None) if ctx.original is not None else None
    if original is None:
        why = f"the original {name}() was not found in the user's module"
        return {"helper vs op": {"passed": False, "detail": why}}
    ran = [(how, args) for how, obs, args in ctx.observations if obs is not None]
    found = [(how, *_against_original(original, op, args, ctx.w.autocast)) for how, args in ran]
    bad = [f"{how}: {why}" for how, why, _ in found if why]
    no_grad = [how for how, _, with_grad in found if not with_grad]
    detail = f"the op against the original {name}() on the arguments it got on " + (
        ", ".join(how for how, _ in ran) or "no call"
    )
    detail += (
        f": {'; '.join(bad)}"
        if bad
        else ": outputs and requires_grad equal (inputs requiring grad)"
    )
    if no_grad:
        detail += f"; without grad on {', '.join(no_grad)} (the original raises with it)"
    return {"helper vs op": {"passed": bool(ran) and not bad, "detail": detail}}


def _gradient_check(ctx: ProofContext) -> Checks:
    """The parameters' gradients of the outputs' sum, patched vs original, on each call."""
    differ, notes = [], set()
    for how, ca in ctx.made:
        try:
            if grads_differ(ctx, ca, notes):
                differ.append(how)
        except Exception as exc:  # noqa: BLE001 - a backward that raises is the finding
            differ.append(f"{how} ({type(exc).__name__}: {first_line(str(exc))[:120]})")
    detail = "parameters' gradients of the outputs' sum, patched vs original, on " + ", ".join(
        how for how, _ in ctx.made
    )
    detail += f": differ on {', '.join(differ)}" if differ else ": equal"
    if notes and not differ:
        detail += f" ({'; '.join(sorted(notes))})"
    return {"gradients": {"passed": not differ, "detail": detail}}


def prove(ctx: ProofContext) -> Checks:
    """opcheck, the op against the original helper, the gradients, and the compiled copy on every
    variant."""
    op, missing = custom_op.patched_op(ctx)
    if op is None:
        return missing
    what = f"{ctx.planned.payload.function}()"
    checks = {**custom_op.opcheck(ctx, op, what), **_helper_check(ctx, op)}
    if ctx.w.kind != "train":
        checks.update(_gradient_check(ctx))
    checks.update(custom_op.compiled_on_variants(ctx))
    return checks
