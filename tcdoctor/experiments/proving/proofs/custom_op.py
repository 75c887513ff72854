"""Proof OPCHECK (TCD105 custom-op): the generated op checked by `torch.library.opcheck` on the
inputs the line saw on the workload's call and every input variant, then the patched copy compiled
with a backend that traces the op's fake (aot_eager) against its own eager outputs on every
variant.

Why every variant: a fake right on the workload's inputs only (a shape observed, not derived)
passes opcheck there and fails on the first input of another shape; a variant shows it here, not
in the user's run.

Pitfall: an input the line did not run on (a branch around it) is named, not checked; with no
input checked at all the check fails.
"""

from __future__ import annotations

from typing import Any

from .. import sandbox
from ..plan import first_line
from .context import Check, Checks, ProofContext

COMPILE_CHECK_BACKEND = "aot_eager"  # a custom op's fake is exercised by AOT tracing


def opcheck_one(op: Any, args: tuple) -> str | None:
    """torch.library.opcheck on one input: None when it passes, else what failed."""
    import torch

    try:
        torch.library.opcheck(op, args)
    except Exception as exc:  # noqa: BLE001 - a failing check is the finding
        return f"{type(exc).__name__}: {first_line(str(exc))}"[:300]
    return None


def patched_op(ctx: ProofContext) -> tuple[Any, Checks]:
    """The op the patch defines, found in the patched module by the payload's function name; when
    it is missing, the failed opcheck saying so."""
    function = ctx.planned.payload.function
    mod = sandbox.module_at(ctx.copy_path)
    op = getattr(mod, function, None) if mod is not None else None
    if op is not None:
        return op, {}
    why = f"the generated op {function} was not found in the patched module"
    return None, {"torch.library.opcheck": Check(passed=False, detail=why)}


def opcheck(
    ctx: ProofContext, op: Any, what: str = "the line", observations: list | None = None
) -> Checks:
    """opcheck on the inputs `what` (the line, or a helper) got on each call it ran on
    (`observations`: the op's arguments, when they are not the observed ones)."""
    observations = ctx.observations if observations is None else observations
    ran = [(how, args) for how, obs, args in observations if obs is not None]
    failed = [(how, why) for how, args in ran if (why := opcheck_one(op, args))]  # type: ignore[arg-type]
    skipped = [how for how, obs, _ in observations if obs is None]
    detail = (
        f"passed on the inputs {what} saw on {', '.join(h for h, _ in ran)}"
        if not failed
        else "; ".join(f"{how}: {why}" for how, why in failed)
    )
    if skipped:
        detail += f" ({what} did not run on {', '.join(skipped)})"
    return {"torch.library.opcheck": Check(passed=bool(ran) and not failed, detail=detail)}


def compiled_on_variants(ctx: ProofContext) -> Checks:
    """The patched copy compiled (aot_eager: the fake traced) against its eager outputs on the
    workload's inputs and every variant."""
    import torch

    from ....probes import outputs
    from ....target.pristine import reset_rng_state
    from ...pair import caller

    call = caller(ctx.pw, ctx.device)
    bad: list[str] = []
    for how, ca in ctx.made:
        model = ctx.fresh_p().model
        reset_rng_state()
        eager = outputs.snapshot(call(model, ca))
        torch._dynamo.reset()
        try:
            compiled = torch.compile(model, backend=COMPILE_CHECK_BACKEND)
            reset_rng_state()
            got = outputs.snapshot(call(compiled, ca))
        except Exception as exc:  # noqa: BLE001 - a compile that fails on a variant is the finding
            bad.append(f"{how} ({type(exc).__name__}: {first_line(str(exc))[:120]})")
            continue
        finally:
            torch._dynamo.reset()
        why = "patched copy, compiled vs eager"
        if sandbox.same(eager, got, ctx.w.autocast, why)["passed"] is False:
            bad.append(f"{how} (outputs differ)")
    return {
        "compiled on every variant": Check(
            passed=not bad,
            detail=f"the patched copy compiled (backend={COMPILE_CHECK_BACKEND}, the op's fake "
            "traced) against its eager outputs on "
            + ", ".join(how for how, _ in ctx.made)
            + (f": fails on {'; '.join(bad)}" if bad else ": equal on each"),
        )
    }


def prove(ctx: ProofContext) -> Checks:
    """opcheck on the inputs the line saw on the workload's call and every variant, then the
    patched copy compiled (aot_eager: the fake traced) against its eager outputs on every
    variant: a fake right on the workload's inputs only fails here."""
    op, missing = patched_op(ctx)
    if op is None:
        return missing
    return {**opcheck(ctx, op), **compiled_on_variants(ctx)}
