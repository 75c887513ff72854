"""Proof "helper-disable" (TCD107): the helper under `@torch.compiler.disable` takes fewer breaks
in PyTorch's own counters, and the patched copy compiled computes what the original computes
eagerly, with the same Python-side state written.

Method.
- Breaks: the original and the patched copy, each a fresh pristine copy compiled with the cheap
  backend (`eager`) and called once on the workload's inputs, Dynamo reset and counters cleared
  before each (the patched copy's is the first compiled call of the state check below): `counters["graph_break"]` and `counters["unimplemented"]` summed (a break in an
  inlined function is counted twice by PyTorch, the same way on both sides), and
  `counters["stats"]["unique_graphs"]`. Passed when the patched copy's breaks are fewer. The
  detail says what the patch leaves: the call site's own break ("Skip calling
  `torch.compiler.disable()`d function"), the helper running eagerly between two graphs.
- Outputs and state, on the workload's inputs and every variant: the original called eagerly and
  the patched copy compiled (backend `eager`: disable is Dynamo's, no fake is traced), each on
  a pristine copy with every RNG reset. The
  Python-side state is the user's module's plain globals (lists, tuples, dicts, sets, numbers,
  strings, nested) and the model's plain attributes, read before and after each call; what a
  call changed (the items appended to a list, a counter's increase, a value replaced) must be
  equal on both sides (floats by a relative tolerance of 1e-6, the numerics rule's for the
  tensors), and so must stdout and the log records the call wrote.

Pitfalls: a file the helper writes is not read back (its path is the user's business): the
detail names the state compared. Equal and unchanged proves nothing: the detail says when no
state changed. The original's module has been called before (the analysis ran it), so the state
is compared as what each call changed, never as absolute values.
"""

from __future__ import annotations

import math
from typing import Any

from ...rewrite.helper_disable import PROOF
from .. import sandbox
from ..plan import first_line
from .context import Check, Checks, ProofContext

__all__ = ["PROOF", "prove"]
BACKEND = "eager"  # disable is Dynamo's business: no fake or AOT trace is involved
PLAIN = (bool, int, float, str, type(None))


def _plain(value: Any, depth: int = 0) -> Any:
    """A copy of `value` when it is plain data (numbers, strings, lists, tuples, dicts, sets of
    them), else a marker that it is not compared."""
    if isinstance(value, PLAIN):
        return value
    if depth > 4:
        return ...
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v, depth + 1) for v in value)
    if isinstance(value, (set, frozenset)):
        return {repr(v) for v in value}
    if isinstance(value, dict):
        return {repr(k): _plain(v, depth + 1) for k, v in value.items()}
    return ...


def state(module: Any, model: Any) -> dict[str, Any]:
    """The plain Python state a call may write: the module's globals, the model's attributes."""
    out: dict[str, Any] = {}
    for name, value in vars(module).items() if module is not None else ():
        if not name.startswith("__") and (got := _plain(value)) is not ...:
            out[f"module.{name}"] = got
    for name, value in getattr(model, "__dict__", {}).items():
        if not name.startswith("_") and (got := _plain(value)) is not ...:
            out[f"model.{name}"] = got
    return out


def changed(before: dict, after: dict) -> dict[str, Any]:
    """What a call changed: a list's appended items, a number's increase, else the new value."""
    out: dict[str, Any] = {}
    for key, new in after.items():
        old = before.get(key, ...)
        if old == new:
            continue
        if isinstance(old, list) and isinstance(new, list) and new[: len(old)] == old:
            out[key] = ("appended", new[len(old) :])
        elif isinstance(old, (int, float)) and isinstance(new, (int, float)):
            out[key] = ("increased by", new - old)
        else:
            out[key] = ("now", new)
    return out


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return a == b


def _read_counters() -> tuple[int, int]:
    """(breaks, unique graphs) in PyTorch's counters since they were last cleared."""
    from torch._dynamo.utils import counters

    breaks = sum(counters["graph_break"].values()) + sum(counters["unimplemented"].values())
    return breaks, int(counters["stats"]["unique_graphs"])


def _original_counts(ctx: ProofContext) -> tuple[int, int]:
    """The original's breaks and graphs for one call compiled with `eager`."""
    import torch
    from torch._dynamo.utils import counters

    from ...pair import caller

    model = ctx.fresh_o().model
    torch._dynamo.reset()
    counters.clear()
    try:
        caller(ctx.w, ctx.device)(torch.compile(model, backend="eager"), ctx.made[0][1])
        return _read_counters()
    finally:
        torch._dynamo.reset()
        counters.clear()


def _break_check(ctx: ProofContext, patched: tuple[int, int] | None) -> Checks:
    if patched is None:
        why = "not counted: the patched copy's compiled call raised (see the state check)"
        return {"fewer breaks (PyTorch's counters)": Check(passed=False, detail=why)}
    b0, g0 = _original_counts(ctx)
    b1, g1 = patched
    detail = (
        f"PyTorch's counters (graph_break + unimplemented, backend='eager', one call on the "
        f"workload's inputs): breaks {b0} → {b1}, graphs {g0} → {g1}; what it leaves: the helper "
        "runs eagerly between graphs, its call site still breaks"
    )
    return {"fewer breaks (PyTorch's counters)": Check(passed=b1 < b0, detail=detail)}


def _one(ctx: ProofContext, ca: Any) -> tuple[bool, dict, dict, str | None, tuple[int, int]]:
    """(outputs equal, the original's state changes, the copy's, what else differs, the copy's
    breaks and graphs in PyTorch's counters for the compiled call)."""
    import torch
    from torch._dynamo.utils import counters

    from ....probes import outputs
    from ....target.pristine import reset_rng_state
    from ...pair import caller

    mod_p = sandbox.module_at(ctx.copy_path)
    model_o, model_p = ctx.fresh_o().model, ctx.fresh_p().model
    s0 = state(ctx.original, model_o)
    reset_rng_state()
    with sandbox.captured() as said_o:
        want = outputs.snapshot(caller(ctx.w, ctx.device)(model_o, ca))
    d_o = changed(s0, state(ctx.original, model_o))
    s1 = state(mod_p, model_p)
    torch._dynamo.reset()
    counters.clear()
    try:
        compiled = torch.compile(model_p, backend=BACKEND)
        reset_rng_state()
        with sandbox.captured() as said_p:
            got = outputs.snapshot(caller(ctx.pw, ctx.device)(compiled, ca))
        counted = _read_counters()
    finally:
        torch._dynamo.reset()
        counters.clear()
    d_p = changed(s1, state(mod_p, model_p))
    same = sandbox.same(want, got, ctx.w.autocast, "original eager vs patched compiled")
    other = None
    if said_o["stdout"] != said_p["stdout"]:
        other = "stdout differs"
    elif said_o["logs"] != said_p["logs"]:
        other = "log records differ"
    return same["passed"] is True, d_o, d_p, other, counted


def _state_check(ctx: ProofContext) -> tuple[Checks, tuple[int, int] | None]:
    """The state check, and the patched copy's counts on the workload's inputs (None: its
    compiled call raised)."""
    if ctx.w.kind == "train":
        why = "not compared (a training step: the step's own checks compare it)"
        return {"outputs and state, compiled": Check(passed=False, detail=why)}, None
    bad, seen, counts = [], set(), None
    for i, (how, ca) in enumerate(ctx.made):
        try:
            equal, d_o, d_p, other, counted = _one(ctx, ca)
        except Exception as exc:  # noqa: BLE001 - a compiled call that raises is the finding
            bad.append(f"{how} ({type(exc).__name__}: {first_line(str(exc))[:120]})")
            continue
        counts = counted if i == 0 else counts
        seen |= set(d_o)
        if not equal:
            bad.append(f"{how} (outputs differ)")
        if d_o.keys() != d_p.keys() or not all(_close(d_o[k], d_p[k]) for k in d_o):
            bad.append(f"{how} (state: original {_short(d_o)}, patched {_short(d_p)})")
        if other:
            bad.append(f"{how} ({other})")
    detail = (
        f"the original eager vs the patched copy compiled (backend={BACKEND}) on "
        + ", ".join(how for how, _ in ctx.made)
        + (f": differ on {'; '.join(bad)}" if bad else ": outputs, stdout and log records equal")
    )
    if not bad:
        detail += (
            f"; state written equal ({', '.join(sorted(seen))})"
            if seen
            else "; no Python-side state changed on these inputs (equal, nothing to compare)"
        )
    return {"outputs and state, compiled": Check(passed=not bad, detail=detail)}, counts


def _short(d: dict) -> str:
    return "; ".join(f"{k} {v[0]} {v[1]!r}"[:80] for k, v in d.items()) or "nothing"


def prove(ctx: ProofContext) -> Checks:
    """Fewer breaks in PyTorch's counters; outputs and Python-side state equal, original eager vs
    patched compiled, on every input variant."""
    state, counts = _state_check(ctx)
    return {**_break_check(ctx, counts), **state}
