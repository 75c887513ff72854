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

- Structure: outputs are flattened with `torch.utils._pytree` (HF `ModelOutput` is registered)
  and objects that hold tensors (HF `DynamicCache`) are walked attribute by attribute; every
  tensor leaf is compared. A type registered without key paths (diffusers' `BaseOutput`, e.g.
  `UNet2DOutput`: `tree_flatten_with_path` raises "Did not find a flatten_with_keys_fn") is
  walked as a mapping, a dataclass, a sequence, or by `tree_flatten` with index paths. What
  cannot be compared (a dtype, a class, an opaque object, one the walk fails on) is listed as
  "not compared (type)" and never fails the check; the walk itself never raises.
- State: a call is also judged on the tensors it changes in place. The state of what is called
  (an `nn.Module`: parameters and buffers, and optimizers it holds; a bound method: its
  `__self__`; an optimizer, e.g. `opt.step`: its `param_groups` parameters and tensors, and
  `state`) is compared, eager vs compiled, where either call changed it from the pristine copy
  (a model that returns None, or BatchNorm's running statistics in train mode). A state tensor
  neither call changed is not compared (no clone is kept: an inference model costs no memory).
- Nothing to compare: "pass" needs at least one tensor or float compared; an output of None (or
  ints, strings) with no changed state is "not measured (why)", never a pass.
- State and RNG: each side is one call on its own pristine copy with every RNG reset first
  (`pristine.reset_rng_state`). Inductor draws random numbers with its own kernels, so for a
  model that draws torch random numbers inside the compiled region (dropout, `torch.rand`), the
  compiled side must be compiled once more with `torch._inductor.config.fallback_random = True`,
  as the harness's accuracy mode does (a run of its own there): Inductor then calls eager's RNG
  ops and still runs its own kernels for everything else. That compile costs about as much as the
  cold compile (16 s of a 74 s analysis on HF BERT's train step), so it runs only when asked
  (`--fallback-random`); otherwise numerics of a random model are "not measured (why)", never
  compared across two RNG streams. When it runs, its cost is reported.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Mapping
from typing import Any, Callable, Iterator

import torch
import torch._dynamo.utils
import torch.utils._pytree as pytree

TOL = {torch.float32: 1e-4, torch.float64: 1e-7, torch.float16: 1e-2, torch.bfloat16: 1e-2}
MAX_DEPTH = 12
SCALARS = (bool, int, float, str, type(None))
RNG_EXACT_BACKENDS = ("eager", "aot_eager")  # backends that call eager's RNG ops as they are

STATE = "state"  # path prefix of the state leaves (tensors a call changes in place)

Leaves = list  # [(path, value)]


class Snapshot(list):
    """(path, leaf) pairs taken right after one call: output leaves, then state leaves.

    `hint` says why a state could not change (an optimizer whose parameters have no `.grad`).
    """

    hint: str | None = None


class Unchanged:
    """A state tensor the call left equal to its pristine value (not cloned: it costs no memory)."""

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = Unchanged()


@dataclasses.dataclass
class NotTaken:
    """The state could not be read after the call; why, for the report."""

    why: str


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"[:300]


def _keyed_children(obj: Any) -> list[tuple[str, Any]] | None:
    """pytree's own key paths; None when `obj` is a pytree leaf; raises for a type without keys."""
    pairs, _ = pytree.tree_flatten_with_path(obj)
    if len(pairs) == 1 and pairs[0][1] is obj:
        return None
    return [(pytree.keystr(keys), leaf) for keys, leaf in pairs]


def _unkeyed_children(obj: Any) -> list[tuple[str, Any]] | None:
    """One level of a container whose pytree registration has no key paths (diffusers' BaseOutput)."""
    if isinstance(obj, Mapping):
        return [(f"[{k!r}]", v) for k, v in obj.items()]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [(f".{f.name}", getattr(obj, f.name, None)) for f in dataclasses.fields(obj)]
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return [(f".{name}", v) for name, v in zip(obj._fields, obj)]
    if isinstance(obj, (list, tuple)):
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    leaves, _ = pytree.tree_flatten(obj)
    if len(leaves) == 1 and leaves[0] is obj:
        return None
    return [(f"[{i}]", leaf) for i, leaf in enumerate(leaves)]


def _children(obj: Any) -> list[tuple[str, Any]] | None:
    """(path suffix, child) pairs one level down, or None for something to compare as it is."""
    try:
        pairs = _keyed_children(obj)
    except Exception:  # noqa: BLE001 - registered without flatten_with_keys_fn, or a broken flatten
        pairs = _unkeyed_children(obj)
    if pairs is not None:
        return pairs
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict) and not isinstance(obj, type) and not callable(obj):
        return [(f".{name}", value) for name, value in attrs.items()]
    return None


def _walk(obj: Any, path: str, out: Leaves, seen: set, depth: int) -> None:
    if isinstance(obj, torch.Tensor) or isinstance(obj, SCALARS) or depth > MAX_DEPTH:
        out.append((path, obj))
        return
    if id(obj) in seen:
        return
    try:
        pairs = _children(obj)
    except Exception:  # noqa: BLE001 - any library object may refuse; it is "not compared (type)"
        pairs = None
    if pairs is None:
        out.append((path, obj))
        return
    seen = seen | {id(obj)}
    for suffix, child in pairs:
        _walk(child, path + suffix, out, seen, depth + 1)


def flatten(obj: Any, path: str = "out") -> Leaves:
    """(path, leaf) pairs: tensors, Python scalars, and whatever could not be looked into."""
    out: Leaves = []
    _walk(obj, path, out, set(), 0)
    return out


def snapshot(obj: Any, fn: Any = None, pristine: Callable[[], Any] | None = None) -> Snapshot:
    """Leaves with tensors detached and cloned: later calls may reuse buffers (CUDA graphs) or mutate caches.

    With `fn` (what was called: a model, a bound method, `opt.step`), the state tensors it reaches
    follow the output leaves (`state_snapshot`). A Snapshot is returned as it is.
    """
    if isinstance(obj, Snapshot):
        return obj
    leaves = Snapshot(
        (p, v.detach().clone() if isinstance(v, torch.Tensor) else v) for p, v in flatten(obj)
    )
    if fn is not None:
        leaves += state_snapshot(fn, pristine)
        leaves.hint = _no_grad_hint(fn)
    return leaves


def _no_grad_hint(fn: Any) -> str | None:
    """An optimizer none of whose parameters has a `.grad`: its step changes nothing."""
    owner = _owner(fn)
    if not isinstance(owner, torch.optim.Optimizer):
        return None
    params = [p for g in owner.param_groups for p in g.get("params", ())]
    if params and all(getattr(p, "grad", None) is None for p in params):
        return "none of the optimizer's parameters has a .grad when it is called, so its step changes nothing"
    return None


def _owner(fn: Any) -> Any:
    """The nn.Module or optimizer whose state a call of `fn` can change, or None.

    A bound method's `__self__` comes before `__wrapped__` (a bound method forwards `__wrapped__`
    to its unbound function); torch.compile's wrappers are unwrapped to what they compile.
    """
    for _ in range(8):
        if isinstance(fn, torch.nn.Module):
            return getattr(fn, "_orig_mod", fn)
        if isinstance(fn, torch.optim.Optimizer):
            return fn
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, (torch.nn.Module, torch.optim.Optimizer)):
            return _owner(owner)
        inner = getattr(fn, "_torchdynamo_orig_callable", None) or getattr(fn, "__wrapped__", None)
        if inner is None or inner is fn:
            return None
        fn = inner
    return None


def _optimizer_state(opt: torch.optim.Optimizer, prefix: str) -> Iterator[tuple[str, Any]]:
    """Its parameters and tensor hyper-parameters per group, then its per-parameter state."""
    names: dict[int, str] = {}
    for g, group in enumerate(opt.param_groups):
        for i, p in enumerate(group.get("params", ())):
            names[id(p)] = f"param_groups[{g}].params[{i}]"
            yield f"{prefix}.{names[id(p)]}", p
        for key, value in group.items():
            if key != "params":
                yield f"{prefix}.param_groups[{g}][{key!r}]", value
    for p, per_param in list(opt.state.items()):
        where = names.get(id(p), "?")
        for key, value in dict(per_param).items() if isinstance(per_param, Mapping) else ():
            yield f"{prefix}.state[{where}][{key!r}]", value


def _module_state(module: torch.nn.Module, prefix: str) -> Iterator[tuple[str, Any]]:
    """Parameters and buffers by their qualified names, then the state of optimizers it holds."""
    for name, t in module.named_parameters():
        yield f"{prefix}.{name}", t
    for name, t in module.named_buffers():
        yield f"{prefix}.{name}", t
    for mod_name, sub in module.named_modules():
        for attr, value in vars(sub).items():
            if isinstance(value, torch.optim.Optimizer):
                where = f"{mod_name}.{attr}" if mod_name else attr
                yield from _optimizer_state(value, f"{prefix}.{where}")


def state_tensors(fn: Any) -> list[tuple[str, torch.Tensor]]:
    """The tensors a call of `fn` can change in place, named for the report; live, not copies.

    A tensor reachable twice (a parameter the model and its optimizer share) is named once.
    """
    owner = _owner(fn)
    if isinstance(owner, torch.nn.Module):
        named = _module_state(owner, f"{STATE}.model")
    elif isinstance(owner, torch.optim.Optimizer):
        named = _optimizer_state(owner, f"{STATE}.optimizer")
    else:
        return []
    out, seen = [], set()
    for path, t in named:
        if isinstance(t, torch.Tensor) and id(t) not in seen:
            seen.add(id(t))
            out.append((path, t))
    return out


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    return bool(torch.equal(a, b))


def state_snapshot(fn: Any, pristine: Callable[[], Any] | None = None) -> Leaves:
    """After a call: each state tensor cloned where it differs from the pristine copy, else UNCHANGED.

    `pristine()` returns the same callable on a fresh pristine copy; it is made only when `fn`
    has state. Without it every state tensor is cloned. Never raises: a failure is one NotTaken.
    """
    try:
        live = state_tensors(fn)
        if not live:
            return []
        before = dict(state_tensors(pristine())) if pristine is not None else {}
        leaves: Leaves = []
        for path, t in live:
            b = before.get(path)
            same = b is not None and _equal(t.detach(), b.detach())
            leaves.append((path, UNCHANGED if same else t.detach().clone()))
        return leaves
    except Exception as exc:  # noqa: BLE001 - a state that cannot be read is reported, not raised
        return [(STATE, NotTaken(f"state not read after the call: {_first_line(exc)}"))]


def is_state(path: str) -> bool:
    return path == STATE or path.startswith(STATE + ".")


def tensor_leaves(leaves: Leaves) -> int:
    """Tensor leaves of the output (state leaves are not outputs)."""
    return sum(1 for p, v in leaves if isinstance(v, torch.Tensor) and not is_state(p))


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


def _compare_other(path: str, eager: Any, compiled: Any) -> dict:
    if isinstance(eager, SCALARS) and isinstance(compiled, SCALARS) and not isinstance(eager, str):
        if isinstance(eager, float) or isinstance(compiled, float):
            ok = (
                eager is not None
                and compiled is not None
                and math.isclose(eager, compiled, rel_tol=1e-4, abs_tol=1e-6)
            )
            return {
                "path": path,
                "kind": "float",
                "passed": ok,
                "rule": "math.isclose(rel_tol=1e-4, abs_tol=1e-6)",
            }
        return {
            "path": path,
            "kind": type(eager).__name__,
            "passed": eager == compiled,
            "rule": "==",
        }
    if isinstance(eager, str) and isinstance(compiled, str):
        return {"path": path, "kind": "str", "passed": eager == compiled, "rule": "=="}
    kind = type(eager).__name__
    return {"path": path, "kind": kind, "passed": None, "note": f"not compared ({kind})"}


def compare_leaf(
    path: str, eager: Any, compiled: Any, ref: Any, tol_dtype: torch.dtype | None = None
) -> dict:
    if not isinstance(eager, torch.Tensor) or not isinstance(compiled, torch.Tensor):
        if isinstance(eager, torch.Tensor) != isinstance(compiled, torch.Tensor):
            return {
                "path": path,
                "kind": type(eager).__name__,
                "passed": False,
                "note": f"eager gave {type(eager).__name__}, compiled gave {type(compiled).__name__}",
            }
        return _compare_other(path, eager, compiled)
    info: dict = {
        "path": path,
        "kind": "tensor",
        "dtype": str(eager.dtype).replace("torch.", ""),
        "shape": list(eager.shape),
    }
    if eager.shape != compiled.shape or eager.dtype != compiled.dtype:
        info.update(
            passed=False,
            note=f"compiled output has shape {list(compiled.shape)} dtype {compiled.dtype}",
        )
        return info
    if not eager.is_floating_point() and not eager.is_complex():
        info.update(
            max_abs_err=float((eager != compiled).sum().item()),
            passed=bool(torch.equal(eager, compiled)),
            rule="exact equality (non-float)",
        )
        return info
    e, c = eager.detach().double().cpu(), compiled.detach().double().cpu()
    diff = (c - e).abs()
    scale = e.abs().max().item() if e.numel() else 0.0
    info["max_abs_err"] = diff.max().item() if e.numel() else 0.0
    info["max_rel_err"] = (
        info["max_abs_err"] / scale
        if scale > 0
        else (0.0 if info["max_abs_err"] == 0 else math.inf)
    )
    info["cosine"] = (
        torch.nn.functional.cosine_similarity(e.flatten(), c.flatten(), dim=0).item()
        if e.numel()
        else 1.0
    )
    judge_dtype = tol_dtype or eager.dtype
    tol = TOL.get(judge_dtype, 1e-4)
    info["tol"] = tol
    nonfinite_mismatch = not torch.equal(torch.isfinite(e), torch.isfinite(c))
    fp64 = ref.detach() if isinstance(ref, torch.Tensor) and ref.shape == eager.shape else None
    info["within_allclose"] = bool(
        torch.allclose(compiled.detach(), eager.detach(), rtol=tol, atol=tol, equal_nan=True)
    )
    if fp64 is not None and fp64.dtype == torch.float64:
        r = fp64.double().cpu()
        info.update(
            eager_rmse_vs_fp64=_rmse(r, e),
            compiled_rmse_vs_fp64=_rmse(r, c),
            multiplier=harness_multiplier(compiled.dtype, eager.shape, fp64.numel(), tol),
        )
    passed, info["rule"] = judge(eager.detach(), compiled.detach(), fp64, tol)
    info["passed"] = passed and not nonfinite_mismatch
    if nonfinite_mismatch:
        info["note"] = "NaN/inf in different places in eager and compiled outputs"
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
            why = f"torch._dynamo.utils.same raised {_first_line(exc)}"
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
) -> tuple[list[dict], int]:
    """One row per state tensor that either call changed; and how many neither call changed.

    A tensor one side left UNCHANGED is compared as its pristine value (`pristine()` gives the
    callable on a fresh pristine copy, made only then).
    """
    e, c = dict(eager), dict(compiled)
    for side, leaves in (("eager", e), ("compiled", c)):
        if isinstance(leaves.get(STATE), NotTaken):
            return [
                {
                    "path": STATE,
                    "kind": "state",
                    "passed": None,
                    "note": f"{side}: {leaves[STATE].why}",
                }
            ], 0
    rows, unchanged, base = [], 0, None
    for path in dict.fromkeys([*e, *c]):
        if path not in e or path not in c:
            side = "eager" if path in e else "compiled"
            rows.append(
                {
                    "path": path,
                    "kind": "tensor",
                    "passed": False,
                    "note": f"exists after {side}'s call only",
                }
            )
            continue
        ev, cv = e[path], c[path]
        if ev is UNCHANGED and cv is UNCHANGED:
            unchanged += 1
            continue
        note = None
        if ev is UNCHANGED or cv is UNCHANGED:
            base = base if base is not None else _pristine_state(pristine)
            if path not in base:
                rows.append(
                    {
                        "path": path,
                        "kind": "tensor",
                        "passed": False,
                        "note": "changed by one call only; its pristine value is not available",
                    }
                )
                continue
            changed = "compiled" if ev is UNCHANGED else "eager"
            note = f"changed by {changed}'s call only (the other side is its pristine value)"
            ev, cv = (
                (base[path] if ev is UNCHANGED else ev),
                (base[path] if cv is UNCHANGED else cv),
            )
        row = compare_leaf(path, ev, cv, None, tol_dtype)
        rows.append({**row, "note": note} if note else row)
    return rows, unchanged


def _pristine_state(pristine: Callable[[], Any] | None) -> dict:
    if pristine is None:
        return {}
    try:
        return {p: t.detach() for p, t in state_tensors(pristine())}
    except Exception:  # noqa: BLE001 - then the leaf is reported as not measurable
        return {}


def _nothing_compared_why(outs: list[dict], state_leaves: int, unchanged: int) -> str:
    """Why no tensor or float was compared: what the call returned, and what it changed."""
    kinds = sorted({o["kind"] for o in outs if not is_state(o["path"])}) or ["nothing"]
    unread = [o["note"] for o in outs if o["path"] == STATE and o.get("note")]
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
    state_rows, unchanged = _state_rows(e_state, c_state, pristine, tol_dtype)
    outs += state_rows
    judged = [o for o in outs if o.get("passed") is not None]
    abs_errs = [
        o["max_abs_err"]
        for o in outs
        if o.get("kind") == "tensor" and "max_abs_err" in o and o.get("rule", "").find("exact") < 0
    ]
    rel_errs = [o["max_rel_err"] for o in outs if "max_rel_err" in o]
    cos = [o["cosine"] for o in outs if "cosine" in o]
    failed = [o for o in judged if not o["passed"]]
    measured = [o for o in judged if o["kind"] in ("tensor", "float")]
    passed = False if failed else (True if measured else None)
    data = {
        "passed": passed,
        "max_abs_err": max(abs_errs) if abs_errs else None,
        "max_rel_err": max(rel_errs) if rel_errs else None,
        "min_cosine": min(cos) if cos else None,
        "fp64_reference": ref is not None,
        "fp64_unavailable_why": ref_why,
        "compared": len(judged),
        "tensors_compared": sum(1 for o in judged if o["kind"] == "tensor"),
        "state_compared": sum(1 for o in state_rows if o.get("passed") is not None),
        "state_unchanged": unchanged,
        "failed_outputs": [o["path"] for o in failed][:20],
        "not_compared": [
            {"path": o["path"], "kind": o["kind"]} for o in outs if o.get("passed") is None
        ][:50],
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
