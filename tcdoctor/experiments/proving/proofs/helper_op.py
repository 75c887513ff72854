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
from .context import Check, Checks, ProofContext

__all__ = ["PROOF", "prove"]


def op_args(ctx: ProofContext, args: tuple) -> tuple:
    """The op's arguments from a call's observed ones: a method's `self` dropped, a NumPy
    attribute as the tensor the method passes (`torch.from_numpy`)."""
    import torch

    if ctx.planned.payload.owner:
        args = args[1:]
    return tuple(
        torch.from_numpy(a) if type(a).__module__ == "numpy" and hasattr(a, "shape") else a
        for a in args
    )


def _original(ctx: ProofContext) -> Any:
    """The original helper, called as the observed arguments come: a function, or a method
    with its observed `self` (the attributes it reads are read off that `self`)."""
    payload = ctx.planned.payload
    if ctx.original is None:
        return None
    if not payload.owner:
        return getattr(ctx.original, payload.function, None)
    klass = getattr(ctx.original, payload.owner, None)
    method = getattr(klass, payload.method, None) if klass is not None else None
    if method is None:
        return None
    n = len(payload.inputs) - sum(1 for a in payload.inputs if a not in _own(ctx))
    return lambda *args: method(args[0], *args[1 : 1 + n])


def _own(ctx: ProofContext) -> set[str]:
    """The method's own parameters among the op's inputs (the rest are its attributes)."""
    need = [n for _, obs, _ in ctx.observations if obs is not None for n in obs["inputs"]]
    return {n for n in need if n != "self" and not n.startswith("self.")}


def _grad_flags(value: Any) -> Any:
    """`requires_grad` of the output, or a list of each output's for a tuple."""
    if isinstance(value, tuple):
        return [getattr(v, "requires_grad", None) for v in value]
    return getattr(value, "requires_grad", None)


def _requiring_grad(args: tuple) -> tuple:
    import torch

    return tuple(
        a.detach().clone().requires_grad_(True)
        if isinstance(a, torch.Tensor) and a.is_floating_point()
        else a
        for a in args
    )


def _against_original(
    ctx: ProofContext, original: Any, op: Any, args: tuple
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
        got = op(*op_args(ctx, grad_args))
    except Exception as exc:  # noqa: BLE001 - an op that fails where the helper runs is the finding
        return f"the op raises {type(exc).__name__}: {first_line(str(exc))[:120]}", with_grad
    w_grad, g_grad = _grad_flags(want), _grad_flags(got)
    if w_grad != g_grad:
        return f"the op's output requires_grad={g_grad}, the helper's {w_grad}", with_grad
    autocast = ctx.w.autocast
    same = sandbox.same(outputs.snapshot(want), outputs.snapshot(got), autocast, "op vs helper")
    return (None if same["passed"] is True else "outputs differ"), with_grad


def _helper_check(ctx: ProofContext, op: Any) -> Checks:
    """The op against the original helper on every call's observed arguments."""
    payload = ctx.planned.payload
    name = f"{payload.owner}.{payload.method}" if payload.owner else payload.function
    original = _original(ctx)
    if original is None:
        why = f"the original {name}() was not found in the user's module"
        return {"helper vs op": Check(passed=False, detail=why)}
    ran = [(how, args) for how, obs, args in ctx.observations if obs is not None]
    found = [(how, *_against_original(ctx, original, op, args)) for how, args in ran]
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
    return {"helper vs op": Check(passed=bool(ran) and not bad, detail=detail)}


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
    return {"gradients": Check(passed=not differ, detail=detail)}


def prove(ctx: ProofContext) -> Checks:
    """opcheck, the op against the original helper, the gradients, and the compiled copy on every
    variant."""
    op, missing = custom_op.patched_op(ctx)
    if op is None:
        return missing
    payload = ctx.planned.payload
    what = f"{payload.owner}.{payload.method}()" if payload.owner else f"{payload.function}()"
    ops = [(h, o, op_args(ctx, a) if o is not None else a) for h, o, a in ctx.observations]
    checks = {**custom_op.opcheck(ctx, op, what, ops), **_helper_check(ctx, op)}
    if ctx.w.kind != "train":
        checks.update(_gradient_check(ctx))
    checks.update(custom_op.compiled_on_variants(ctx))
    return checks
