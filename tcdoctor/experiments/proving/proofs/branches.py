"""Proof BRANCHES (TCD104 tensor-cond): both branches of the original taken, torch.cond's
predicate equal to the `if`'s test wherever it ran, and the patched copy's outputs, buffers and
parameter gradients equal to the original's.

Method. The workload's inputs, every input variant, then generated inputs (negated, scaled,
shifted, zeros, ones, new noise: `variants`) until both branches were seen: on each, the original
runs with its `if` line traced, where the test and the new predicate are evaluated in the
original's frame (`decisions`). A branch counts only where its `if` ran (one-line branches too: no
line of a body has to run); an input the `if` did not run on decides nothing.

Pitfall: verified on the inputs tried only; a branch the generated inputs never reach is named
as not taken, and the check fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .. import sandbox
from .context import Check, Checks, ProofContext

if TYPE_CHECKING:
    from ... import rewrite

BRANCH_TRIES = 12  # generated inputs tried until both branches of a rewritten `if` were taken


def decisions(path: str, payload: rewrite.BranchPayload, run: Callable[[], Any]) -> list[dict]:
    """Each time the `if` ran during `run()`: its test and torch.cond's predicate, evaluated in
    the original's frame when the `if` line starts ({"test": bool, "pred": bool | None}). An if
    that did not run decides nothing: its branch is not counted. One-line branches are counted
    the same way (no line of a body has to run)."""
    import torch

    found: list[dict] = []
    test = compile(payload.test, "<if test>", "eval")
    pred = compile(payload.predicate, "<predicate>", "eval")

    def local(frame: Any, event: str, _arg: Any) -> Any:
        if event == "line" and frame.f_lineno == payload.if_line:
            scope = {"torch": torch, **frame.f_globals}
            try:
                t = bool(eval(test, scope, dict(frame.f_locals)))  # noqa: S307 - the user's own test
            except Exception:  # noqa: BLE001 - a test that raises decides nothing
                return local
            try:
                p: bool | None = bool(eval(pred, scope, dict(frame.f_locals)))  # noqa: S307
            except Exception:  # noqa: BLE001 - the predicate's own failure is a finding
                p = None
            found.append({"test": t, "pred": p})
        return local

    sandbox.traced(path, local, run, payload.function)
    return found


def variants(ca: Any) -> list[tuple[str, Any]]:
    """Inputs made from the workload's (negated, scaled, shifted, zeros, ones, reseeded noise)
    for a branch rewrite: (how it was made, the call's arguments)."""
    import torch

    from ....target.workload import CallArgs

    def mapped(f: Callable[[torch.Tensor], torch.Tensor]) -> CallArgs:
        def one(v: Any) -> Any:
            return f(v) if isinstance(v, torch.Tensor) and v.is_floating_point() else v

        return CallArgs(tuple(one(v) for v in ca.args), {k: one(v) for k, v in ca.kwargs.items()})

    gen = torch.Generator().manual_seed(1)
    ways: list[tuple[str, Callable[[torch.Tensor], torch.Tensor]]] = [
        ("-x", lambda t: -t),
        ("10·x", lambda t: t * 10),
        ("-10·x", lambda t: t * -10),
        ("x + 1", lambda t: t + 1),
        ("x - 1", lambda t: t - 1),
        ("|x|", lambda t: t.abs()),
        ("-|x|", lambda t: -t.abs()),
        ("zeros", torch.zeros_like),
        ("ones", torch.ones_like),
        ("0.1·x", lambda t: t * 0.1),
        ("new noise", lambda t: torch.randn(t.shape, generator=gen, dtype=t.dtype).to(t.device)),
    ]
    return [(how, mapped(f)) for how, f in ways[:BRANCH_TRIES]]


def grads_differ(ctx: ProofContext, ca: Any, notes: set[str]) -> bool:
    """Whether the parameters' gradients of the outputs' sum differ, patched vs original, on one
    call (why there are none goes to `notes`)."""
    from ....probes import outputs

    g_o = sandbox.grads(ctx.w, ctx.fresh_o().model, ca, ctx.device)
    g_p = sandbox.grads(ctx.w, ctx.fresh_p().model, ca, ctx.device)
    if isinstance(g_o, str) or isinstance(g_p, str):
        notes.add(g_o if isinstance(g_o, str) else str(g_p))
        return g_o != g_p
    compared = sandbox.same(outputs.snapshot(g_o), outputs.snapshot(g_p), ctx.w.autocast)
    return compared["passed"] is False


class _Tally:
    """What the tries found: the inputs each branch was taken on, and where something differed."""

    def __init__(self) -> None:
        self.taken: dict[str, list[str]] = {"true": [], "false": []}
        self.differs: list[str] = []
        self.disagree: list[str] = []
        self.grads_differ: list[str] = []
        self.grad_notes: set[str] = set()

    def enough(self, i: int, made: int) -> bool:
        both = self.taken["true"] and self.taken["false"]
        return bool(i >= made - 1 and both and len(self.taken["true"] + self.taken["false"]) >= 4)


def _try(ctx: ProofContext, how: str, ca: Any, tally: _Tally) -> bool:
    """One input: the original traced at its `if`, the patched copy compared with it; False when
    the `if` did not run on it (it decides nothing)."""
    from ....probes import outputs
    from ....target.pristine import reset_rng_state
    from ...pair import caller

    call = caller(ctx.w, ctx.device)
    model_o, model_p = ctx.fresh_o().model, ctx.fresh_p().model
    box: dict = {}

    def run_original() -> None:
        reset_rng_state()
        box["o"] = outputs.snapshot({"out": call(model_o, ca), "buffers": sandbox.buffers(model_o)})

    seen = decisions(ctx.path, ctx.planned.payload, run_original)
    if not seen:
        return False
    for d in seen:
        tally.taken["true" if d["test"] else "false"].append(how)
        if d["pred"] is None or d["pred"] != d["test"]:
            tally.disagree.append(how)
    reset_rng_state()
    got = outputs.snapshot({"out": call(model_p, ca), "buffers": sandbox.buffers(model_p)})
    if sandbox.same(box["o"], got, ctx.w.autocast)["passed"] is not True:
        tally.differs.append(how)
    if ctx.w.kind != "train" and grads_differ(ctx, ca, tally.grad_notes):
        tally.grads_differ.append(how)
    return True


def prove(ctx: ProofContext) -> Checks:
    """Both branches of the original taken (each counted when its `if` ran), the predicate equal
    to the test wherever it ran, and outputs, buffers and gradients equal, on the workload's
    inputs, every variant and generated inputs until both branches were seen."""
    payload, tally = ctx.planned.payload, _Tally()
    tries = list(ctx.made) + variants(ctx.w.call_args)
    for i, (how, ca) in enumerate(tries):
        if _try(ctx, how, ca, tally) and tally.enough(i, len(ctx.made)):
            break
    taken = {k: list(dict.fromkeys(v)) for k, v in tally.taken.items()}
    both = bool(taken["true"] and taken["false"])
    detail = (
        f"true branch taken on {', '.join(taken['true']) or 'no input tried'}; false on "
        f"{', '.join(taken['false']) or 'no input tried'} (counted where the if ran)"
    )
    detail += (
        f"; outputs or buffers differ on {', '.join(tally.differs)}"
        if tally.differs
        else "; outputs and buffers equal on each"
    )
    checks = {"both branches": Check(passed=both and not tally.differs, detail=detail)}
    disagree = tally.disagree
    checks["predicate"] = Check(
        passed=not disagree and both,
        detail=f"torch.cond's `{payload.predicate}` against the test `{payload.test}`, "
        "evaluated where the if ran: "
        + (f"disagree on {', '.join(dict.fromkeys(disagree))}" if disagree else "equal on each"),
    )
    if ctx.w.kind != "train":
        notes = tally.grad_notes
        checks["gradients"] = Check(
            passed=not tally.grads_differ,
            detail="parameters' gradients of the outputs' sum, patched vs original, on each "
            "input the if ran on: "
            + (
                f"differ on {', '.join(tally.grads_differ)}"
                if tally.grads_differ
                else "equal" + (f" ({'; '.join(sorted(notes))})" if notes else "")
            ),
        )
    return checks
