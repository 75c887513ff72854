"""Compiled vs eager outputs, both judged against an fp64 reference where the model allows it.

Pass/fail per tensor is the benchmark harness's own comparator, `torch._dynamo.utils.same(eager,
compiled, fp64_ref=fp64, tol=tol)`, called on each tensor leaf of tcdoctor's walk: in 2.13 it
passes anything within `allclose(eager, compiled, rtol=tol, atol=tol)`, and otherwise compiled
passes if its RMSE against fp64 is at most `multiplier × eager's RMSE + tol/10`, so rounding that
eager shares is not blamed on the compiler; the multiplier is 3.0 for fp16/bf16 outputs, for
`fp64_ref.numel() < 1000`, for 4-D outputs with 1×1 trailing dims and for `tol >= 2e-2`, else 2.0.
tcdoctor keeps its own figures per output (max abs/rel error, cosine, both RMSEs, the multiplier
`same` applies, whether allclose held) and adds one condition of its own: NaN/inf in the same
places on both sides. Pitfalls handled here:

- `same` is private: where it is missing or raises on a leaf, the same rule is applied by
  tcdoctor's copy of it (`_rule_fallback`) and the output's `rule` says so.

- Structure and state: every tensor leaf of the output walk (`probes/outputs.py`) is compared,
  and every state tensor (parameters, buffers, optimizer state of what was called) that either
  call changed in place, eager vs compiled; a state tensor only one side changed is compared as
  its pristine value. What cannot be compared (a dtype, a class, an opaque object) is listed as
  "not compared (type)" and never fails the check.
- Nothing to compare: "pass" needs at least one tensor or float compared; an output of None (or
  ints, strings) with no changed state is "not measured (why)", never a pass.
- Random numbers: both sides must draw the same ones (`probes/randomness.py`: the model is checked for
  randomness, and compiled again with fallback_random under `--fallback-random`); a random model
  is otherwise "not measured (why)", never compared across two RNG streams.

The numerics phase (`measure`) compares the eager phase's snapshot with the compile phase's, each
one call on its own pristine copy with every RNG reset first.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Callable

import torch
import torch._dynamo.utils
import torch.utils._pytree as pytree

from ..report.numerics_row import NumericsRow as Row
from ..report.phases import Skip
from . import randomness
from .context import PhaseContext
from .outputs import (
    SCALARS,
    STATE,
    UNCHANGED,
    Leaves,
    NotTaken,
    first_line,
    is_state,
    mutated,
    snapshot,
    state_tensors,
)

TOL = {torch.float32: 1e-4, torch.float64: 1e-7, torch.float16: 1e-2, torch.bfloat16: 1e-2}


def to_fp64(obj: Any) -> Any:
    def cast(x: Any) -> Any:
        return x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x

    return pytree.tree_map(cast, obj)


def fp64_reference(
    model: Any, run: Callable[[Any, Callable[[Any], Any]], Any]
) -> tuple[Leaves | None, str | None]:
    """`run(model64, cast)` calls a float64 copy on inputs passed through `cast`; None and why if impossible."""
    if not isinstance(model, torch.nn.Module):
        return None, "model is not an nn.Module, so it cannot be cast to float64"
    try:
        m64 = copy.deepcopy(model).to(torch.float64)
        return snapshot(run(m64, to_fp64)), None
    except Exception as exc:  # noqa: BLE001 - some models cannot run in fp64; that is reported
        first = str(exc).splitlines()[0] if str(exc) else ""
        return None, f"fp64 copy of the model failed: {type(exc).__name__}: {first}"[:500]


def _rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return math.sqrt(torch.mean((a.double() - b.double()) ** 2).item()) if a.numel() else 0.0


def _compare_other(path: str, eager: Any, compiled: Any) -> Row:
    if isinstance(eager, SCALARS) and isinstance(compiled, SCALARS) and not isinstance(eager, str):
        if isinstance(eager, float) or isinstance(compiled, float):
            ok = (
                eager is not None
                and compiled is not None
                and math.isclose(eager, compiled, rel_tol=1e-4, abs_tol=1e-6)
            )
            return Row.of(
                path=path, kind="float", passed=ok, rule="math.isclose(rel_tol=1e-4, abs_tol=1e-6)"
            )
        return Row.of(path=path, kind=type(eager).__name__, passed=eager == compiled, rule="==")
    if isinstance(eager, str) and isinstance(compiled, str):
        return Row.of(path=path, kind="str", passed=eager == compiled, rule="==")
    kind = type(eager).__name__
    return Row.of(path=path, kind=kind, passed=None, note=f"not compared ({kind})")


def compare_leaf(
    path: str, eager: Any, compiled: Any, ref: Any, tol_dtype: torch.dtype | None = None
) -> Row:
    """One leaf's row (the module docstring's rule): the keys set in the order the report writes."""
    if not isinstance(eager, torch.Tensor) or not isinstance(compiled, torch.Tensor):
        if isinstance(eager, torch.Tensor) != isinstance(compiled, torch.Tensor):
            return Row.of(
                path=path,
                kind=type(eager).__name__,
                passed=False,
                note=f"eager gave {type(eager).__name__}, compiled gave {type(compiled).__name__}",
            )
        return _compare_other(path, eager, compiled)
    info = Row.of(
        path=path,
        kind="tensor",
        dtype=str(eager.dtype).replace("torch.", ""),
        shape=list(eager.shape),
    )
    if eager.shape != compiled.shape or eager.dtype != compiled.dtype:
        info.passed = False
        info.note = f"compiled output has shape {list(compiled.shape)} dtype {compiled.dtype}"
        return info
    if not eager.is_floating_point() and not eager.is_complex():
        info.max_abs_err = float((eager != compiled).sum().item())
        info.passed = bool(torch.equal(eager, compiled))
        info.rule = "exact equality (non-float)"
        return info
    e, c = eager.detach().double().cpu(), compiled.detach().double().cpu()
    diff = (c - e).abs()
    scale = e.abs().max().item() if e.numel() else 0.0
    info.max_abs_err = diff.max().item() if e.numel() else 0.0
    info.max_rel_err = (
        info.max_abs_err / scale if scale > 0 else (0.0 if info.max_abs_err == 0 else math.inf)
    )
    info.cosine = (
        torch.nn.functional.cosine_similarity(e.flatten(), c.flatten(), dim=0).item()
        if e.numel()
        else 1.0
    )
    judge_dtype = tol_dtype or eager.dtype
    tol = TOL.get(judge_dtype, 1e-4)
    info.tol = tol
    nonfinite_mismatch = not torch.equal(torch.isfinite(e), torch.isfinite(c))
    fp64 = ref.detach() if isinstance(ref, torch.Tensor) and ref.shape == eager.shape else None
    info.within_allclose = bool(
        torch.allclose(compiled.detach(), eager.detach(), rtol=tol, atol=tol, equal_nan=True)
    )
    if fp64 is not None and fp64.dtype == torch.float64:
        r = fp64.double().cpu()
        info.eager_rmse_vs_fp64 = _rmse(r, e)
        info.compiled_rmse_vs_fp64 = _rmse(r, c)
        info.multiplier = harness_multiplier(compiled.dtype, eager.shape, fp64.numel(), tol)
    passed, info.rule = judge(eager.detach(), compiled.detach(), fp64, tol)
    info.passed = passed and not nonfinite_mismatch
    if nonfinite_mismatch:
        info.note = "NaN/inf in different places in eager and compiled outputs"
    return info


def harness_multiplier(
    res_dtype: torch.dtype, shape: torch.Size, fp64_numel: int, tol: float
) -> float:
    """The RMSE multiplier `torch._dynamo.utils.same` applies in 2.13 (read in the wheel), for the
    figure and the fallback: 3.0 for fp16/bf16 results, fewer than 1000 reference elements, 4-D
    outputs with 1x1 trailing dims, or tol >= 2e-2; else 2.0."""
    if res_dtype in (torch.float16, torch.bfloat16):
        return 3.0
    if fp64_numel < 1000 or (len(shape) == 4 and shape[-1] == shape[-2] == 1) or tol >= 2e-2:
        return 3.0
    return 2.0


def _rule_text(tol: float, fp64: torch.Tensor | None, mult: float | None) -> str:
    if fp64 is None or fp64.dtype != torch.float64:
        return f"allclose(compiled, eager, rtol={tol}, atol={tol}) (no fp64 reference)"
    return (
        f"allclose(compiled, eager, rtol={tol}, atol={tol}), else "
        f"rmse(compiled, fp64) <= {mult} * rmse(eager, fp64) + {tol}/10"
    )


def judge(
    eager: torch.Tensor, compiled: torch.Tensor, fp64: torch.Tensor | None, tol: float
) -> tuple[bool, str]:
    """(passed, the rule in words) for one float tensor leaf: `torch._dynamo.utils.same`, the
    harness's comparator, where it is there and takes the leaf; else tcdoctor's copy of its rule."""
    mult = (
        harness_multiplier(compiled.dtype, eager.shape, fp64.numel(), tol)
        if fp64 is not None
        else None
    )
    text = _rule_text(tol, fp64, mult)
    same = getattr(torch._dynamo.utils, "same", None)
    why = "torch._dynamo.utils.same is not in this torch"
    if same is not None:
        try:
            ok = same(eager, compiled, fp64_ref=fp64, tol=tol, equal_nan=True, log_error=_quiet)
            return bool(
                ok
            ), f"torch._dynamo.utils.same(eager, compiled, fp64_ref, tol={tol}): {text}"
        except Exception as exc:  # noqa: BLE001 - private API; its rule is applied by tcdoctor then
            why = f"torch._dynamo.utils.same raised {first_line(exc)}"
    return _rule_fallback(
        eager, compiled, fp64, tol, mult
    ), f"{text} (tcdoctor's copy of the harness rule: {why})"


def _quiet(*_args: Any) -> None:
    """`same` logs each failure at ERROR on the user's terminal; the report says it instead."""


def _rule_fallback(
    eager: torch.Tensor,
    compiled: torch.Tensor,
    fp64: torch.Tensor | None,
    tol: float,
    mult: float | None,
) -> bool:
    e, c = eager.double().cpu(), compiled.double().cpu()
    if torch.allclose(c, e, rtol=tol, atol=tol, equal_nan=True):
        return True
    if fp64 is None or fp64.dtype != torch.float64 or mult is None:
        return False
    r = fp64.double().cpu()
    return _rmse(r, c) <= mult * _rmse(r, e) + tol / 10.0


def _split(leaves: Leaves) -> tuple[Leaves, Leaves]:
    out = [(p, v) for p, v in leaves if not is_state(p)]
    return out, [(p, v) for p, v in leaves if is_state(p)]


def _state_rows(
    eager: Leaves,
    compiled: Leaves,
    pristine: Callable[[], Any] | None,
    tol_dtype: torch.dtype | None,
    inputs_before: dict | None = None,
) -> tuple[list[Row], int]:
    """One row per state tensor that either call changed; and how many neither call changed.

    A tensor one side left UNCHANGED is compared as its pristine value (`pristine()` gives the
    callable on a fresh pristine copy, made only then; an input's from `inputs_before`, the
    snapshots' own pristine copies of the inputs a call changed).
    """
    e, c = dict(eager), dict(compiled)
    for side, leaves in (("eager", e), ("compiled", c)):
        if isinstance(leaves.get(STATE), NotTaken):
            return [
                Row.of(path=STATE, kind="state", passed=None, note=f"{side}: {leaves[STATE].why}")
            ], 0
    rows, unchanged, base = [], 0, None
    for path in dict.fromkeys([*e, *c]):
        if path not in e or path not in c:
            side = "eager" if path in e else "compiled"
            rows.append(
                Row.of(
                    path=path, kind="tensor", passed=False, note=f"exists after {side}'s call only"
                )
            )
            continue
        ev, cv = e[path], c[path]
        if ev is UNCHANGED and cv is UNCHANGED:
            unchanged += 1
            continue
        note = None
        if ev is UNCHANGED or cv is UNCHANGED:
            base = (
                base if base is not None else {**_pristine_state(pristine), **(inputs_before or {})}
            )
            if path not in base:
                why = "changed by one call only; its pristine value is not available"
                rows.append(Row.of(path=path, kind="tensor", passed=False, note=why))
                continue
            changed = "compiled" if ev is UNCHANGED else "eager"
            note = f"changed by {changed}'s call only (the other side is its pristine value)"
            ev, cv = (
                (base[path] if ev is UNCHANGED else ev),
                (base[path] if cv is UNCHANGED else cv),
            )
        row = compare_leaf(path, ev, cv, None, tol_dtype)
        if note:
            row.note = note
        rows.append(row)
    return rows, unchanged


def _pristine_state(pristine: Callable[[], Any] | None) -> dict:
    if pristine is None:
        return {}
    try:
        return {p: t.detach() for p, t in state_tensors(pristine())}
    except Exception:  # noqa: BLE001 - then the leaf is reported as not measurable
        return {}


def _nothing_compared_why(outs: list[Row], state_leaves: int, unchanged: int) -> str:
    """Why no tensor or float was compared: what the call returned, and what it changed."""
    kinds = sorted({o.kind for o in outs if not is_state(o.path)}) or ["nothing"]
    unread = [o.note for o in outs if o.path == STATE and o.note]
    if unread:
        state = unread[0]
    elif state_leaves == 0:
        state = "it reaches no model or optimizer state to compare"
    else:
        state = (
            f"neither call changed any of the {unchanged} state tensors of the model or "
            "optimizer it belongs to"
        )
    return (
        f"nothing numeric to compare: the call returned {', '.join(kinds)} (no tensor, no float) "
        f"and {state}"
    )


def compare(
    eager: Leaves,
    compiled: Leaves,
    ref: Leaves | None,
    ref_why: str | None,
    tol_dtype: torch.dtype | None = None,
    pristine: Callable[[], Any] | None = None,
) -> dict:
    """Compare snapshots leaf by leaf (outputs: same paths; state: what either call changed).

    `tol_dtype` is the autocast dtype when there is one; `pristine()` the called object on a fresh
    pristine copy, for a state tensor only one side changed. "passed" needs a tensor or a float
    compared (or something that failed); else it is None with `not_measured` saying why.
    """
    (e_out, e_state), (c_out, c_state) = _split(eager), _split(compiled)
    if [p for p, _ in e_out] != [p for p, _ in c_out]:
        only_e = sorted({p for p, _ in e_out} - {p for p, _ in c_out})[:5]
        only_c = sorted({p for p, _ in c_out} - {p for p, _ in e_out})[:5]
        return {
            "passed": False,
            "max_abs_err": None,
            "max_rel_err": None,
            "outputs": [],
            "note": f"compiled output has a different structure from eager output (only eager: {only_e}; only compiled: {only_c})",
        }
    refs = dict(ref) if ref is not None else {}
    outs = [compare_leaf(p, e, c, refs.get(p), tol_dtype) for (p, e), (_, c) in zip(e_out, c_out)]
    before = {**(getattr(eager, "inputs_before", None) or {})}
    before.update(getattr(compiled, "inputs_before", None) or {})
    state_rows, unchanged = _state_rows(e_state, c_state, pristine, tol_dtype, before)
    outs += state_rows
    judged = [o for o in outs if o.passed is not None]
    abs_errs = [
        o.max_abs_err
        for o in outs
        if o.kind == "tensor" and o.max_abs_err is not None and "exact" not in (o.rule or "")
    ]
    rel_errs = [o.max_rel_err for o in outs if o.max_rel_err is not None]
    cos = [o.cosine for o in outs if o.cosine is not None]
    failed = [o for o in judged if not o.passed]
    measured = [o for o in judged if o.kind in ("tensor", "float")]
    passed = False if failed else (True if measured else None)
    data = {
        "passed": passed,
        "max_abs_err": max(abs_errs) if abs_errs else None,
        "max_rel_err": max(rel_errs) if rel_errs else None,
        "min_cosine": min(cos) if cos else None,
        "fp64_reference": ref is not None,
        "fp64_unavailable_why": ref_why,
        "compared": len(judged),
        "tensors_compared": sum(1 for o in judged if o.kind == "tensor"),
        "state_compared": sum(1 for o in state_rows if o.passed is not None),
        "state_unchanged": unchanged,
        "failed_outputs": [o.path for o in failed][:20],
        "not_compared": [Row.of(path=o.path, kind=o.kind) for o in outs if o.passed is None][:50],
        "outputs": outs[:200],
        "method": "one call each on its own pristine copy with every RNG reset first (torch, Python random, NumPy); "
        "every tensor leaf of the output compared, and every state tensor (parameters, buffers, optimizer "
        "state of what was called) that either call changed in place; each float tensor passes by PyTorch's "
        "benchmark harness comparator, torch._dynamo.utils.same(eager, compiled, fp64_ref, tol): within "
        "allclose(rtol=atol=tol), else rmse(compiled, fp64) <= m * rmse(eager, fp64) + tol/10, m = 3 for "
        "fp16/bf16, fewer than 1000 elements, 4-D outputs with 1x1 trailing dims or tol >= 2e-2, else 2 "
        "(tol 1e-4 fp32, 1e-2 fp16/bf16 or under autocast to them), with NaN/inf in the same places; "
        "each output's rule says where tcdoctor's copy of that rule stood in for it; max_rel_err = "
        "max|compiled-eager| / max|eager| per output",
    }
    if passed is None:
        why = _nothing_compared_why(outs, len(e_state), unchanged)
        hint = getattr(eager, "hint", None) or getattr(compiled, "hint", None)
        data["not_measured"] = f"{why} ({hint})" if hint else why
    return data


TRAIN_REFERENCE_WHY = (
    "training step: the loss of the first step is compared, eager vs compiled, each from the same "
    "initial weights"
)


def phase_numerics(ctx: PhaseContext) -> dict:
    """The numerics phase (ctx: the run.runner.PhaseRunner): the eager phase's snapshot against the
    compile phase's, an fp64 copy's output as the reference; a random model's compiled side is
    compiled again with fallback_random when asked (probes/randomness.py), else not compared."""
    ctx.need_compiled()
    if ctx.eager_out is None or ctx.compiled_out is None:
        raise Skip("no eager or compiled output to compare")
    compiled_out = ctx.compiled_out
    changes = mutated(ctx.eager_out)  # what the call changes in place: named, never "random"
    if ctx.workload.kind == "train":  # a step changes its model and optimizer by design
        changes["state"] = []
    rng = randomness.rng_check(
        ctx.options.backend,
        lambda: ctx.call_and_snapshot(ctx.fresh()),
        ctx.options.fallback_random,
    )
    why = randomness.random_not_compared(rng)
    if why:
        return {"rng": rng, "not_measured": why, "state": ctx.pristine.method, "mutates": changes}
    if rng["fallback_random"]:
        compiled_out = _fallback_random_out(ctx, rng)
    if ctx.workload.kind == "train":
        ref, why = None, TRAIN_REFERENCE_WHY
    else:
        ref, why = fp64_reference(ctx.fresh().fn, lambda m64, cast: _fp64_run(ctx, m64, cast))
    data = compare(ctx.eager_out, compiled_out, ref, why, ctx.workload.autocast, ctx.pristine_fn)
    data["rng"] = rng
    data["state"] = ctx.pristine.method
    data["mutates"] = changes
    return data


def _fp64_run(ctx: PhaseContext, model64: Any, cast: Callable[[Any], Any]) -> Any:
    from ..target.pristine import reset_rng_state

    reset_rng_state()
    # the inputs as build() returned them, copied: a forward that changes its inputs in place has
    # changed the original's by now, and must not change the pristine ones
    ca = copy.deepcopy(ctx.pristine_inputs())
    with torch.no_grad() if not ctx.workload.grad else torch.enable_grad():  # fp64: no autocast
        return model64(*cast(ca.args), **cast(ca.kwargs))


def _fallback_random_out(ctx: PhaseContext, rng: dict) -> Leaves:
    def compiled_on_fresh_copy() -> list:
        subject = ctx.fresh()
        return ctx.call_and_snapshot(subject, ctx.torch_compile(subject))

    out = randomness.fallback_random_output(compiled_on_fresh_copy, rng)
    ctx.dynamo_reset = True  # Dynamo's cache was cleared: the recompile sequence starts again
    return out
