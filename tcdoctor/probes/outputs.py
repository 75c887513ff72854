"""What one call produced, kept for numerics: its output leaves and the state it changed in place.

A snapshot is taken right after a call (eager's first call, the compiled first call, the
fallback_random compile's call) and compared later by `probes/numerics.py`. Pitfalls handled here:

- Structure: outputs are flattened with `torch.utils._pytree` (HF `ModelOutput` is registered)
  and objects that hold tensors (HF `DynamicCache`) are walked attribute by attribute. A type
  registered without key paths (diffusers' `BaseOutput`, e.g. `UNet2DOutput`:
  `tree_flatten_with_path` raises "Did not find a flatten_with_keys_fn") is walked as a mapping,
  a dataclass, a sequence, or by `tree_flatten` with index paths. What cannot be looked into (a
  dtype, a class, an opaque object, one the walk fails on) is kept as it is, for numerics to list
  as "not compared (type)"; the walk itself never raises.
- Buffers: tensors are detached and cloned, since later calls may reuse buffers (CUDA graphs) or
  mutate caches.
- State: the state of what is called (an `nn.Module`: parameters and buffers, and optimizers it
  holds; a bound method: its `__self__`; an optimizer, e.g. `opt.step`: its `param_groups`
  parameters and tensors, and `state`) follows the output leaves under the `state.` path prefix.
  A state tensor equal to its pristine value is kept as UNCHANGED, not cloned, so an inference
  model costs no memory; a state that cannot be read is one NotTaken leaf saying why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Callable, Iterator

import torch
import torch.utils._pytree as pytree

MAX_DEPTH = 12
SCALARS = (bool, int, float, str, type(None))

STATE = "state"  # path prefix of the state leaves (tensors a call changes in place)

Leaves = list  # [(path, value)]


class Snapshot(list):
    """(path, leaf) pairs taken right after one call: output leaves, then state leaves.

    `hint` says why a state could not change (an optimizer whose parameters have no `.grad`).
    `inputs_before`: the pristine value of each input tensor the call changed in place, by path
    (the other side may have left it as it was: it is then compared against this).
    """

    hint: str | None = None
    inputs_before: dict | None = None


class Unchanged:
    """A state tensor the call left equal to its pristine value (not cloned: it costs no memory)."""

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = Unchanged()


@dataclasses.dataclass
class NotTaken:
    """The state could not be read after the call; why, for the report."""

    why: str


def first_line(exc: BaseException) -> str:
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


def snapshot(
    obj: Any,
    fn: Any = None,
    pristine: Callable[[], Any] | None = None,
    inputs: tuple[Any, Any] | None = None,
) -> Snapshot:
    """Leaves with tensors detached and cloned: later calls may reuse buffers (CUDA graphs) or mutate caches.

    With `fn` (what was called: a model, a bound method, `opt.step`), the state tensors it reaches
    follow the output leaves (`state_snapshot`); with `inputs` (the call arguments the call was
    given, and their pristine copy), the input tensors it changed in place (`inputs_snapshot`). A
    Snapshot is returned as it is.
    """
    if isinstance(obj, Snapshot):
        return obj
    leaves = Snapshot(
        (p, v.detach().clone() if isinstance(v, torch.Tensor) else v) for p, v in flatten(obj)
    )
    if fn is not None:
        leaves += state_snapshot(fn, pristine)
        leaves.hint = _no_grad_hint(fn)
    if inputs is not None:
        found, leaves.inputs_before = inputs_snapshot(*inputs)
        leaves += found
    return leaves


INPUTS = f"{STATE}.inputs"  # path prefix of the input tensors, among the state leaves


def _input_tensors(call_args: Any) -> dict[str, torch.Tensor]:
    """The input tensors of a call's arguments by path ('args[1]', "kwargs['mask']")."""
    leaves = flatten(tuple(call_args.args), "args") + flatten(dict(call_args.kwargs), "kwargs")
    return {p: v for p, v in leaves if isinstance(v, torch.Tensor)}


def inputs_snapshot(used: Any, pristine: Any) -> tuple[Leaves, dict]:
    """After a call: each input tensor (`state.inputs.args[1]`) UNCHANGED where it equals its
    pristine copy, else cloned, and the pristine values of those the call changed. What mutates
    its inputs is judged on them, as on its state: numerics compares them like state tensors.
    Never raises: inputs that cannot be read are left out."""
    try:
        after, before = _input_tensors(used), _input_tensors(pristine)
    except Exception:  # noqa: BLE001 - an input structure the walk cannot read
        return [], {}
    leaves: Leaves = []
    changed: dict = {}
    for path, t in after.items():
        b = before.get(path)
        if b is not None and _equal(t.detach(), b.detach()):
            leaves.append((f"{INPUTS}.{path}", UNCHANGED))
        else:
            leaves.append((f"{INPUTS}.{path}", t.detach().clone()))
            if b is not None:
                changed[f"{INPUTS}.{path}"] = b.detach().clone()
    return leaves, changed


def mutated(leaves: Leaves) -> dict[str, list[str]]:
    """What a call changed in place, from its snapshot: {"inputs": ['args[1]'], "state": [...]}
    (model parameters, buffers, optimizer state: the paths under `state.`)."""
    inputs = [
        p[len(INPUTS) + 1 :] for p, v in leaves if p.startswith(INPUTS + ".") and v is not UNCHANGED
    ]
    state = [
        p[len(STATE) + 1 :]
        for p, v in leaves
        if is_state(p)
        and not p.startswith(INPUTS + ".")
        and p != STATE
        and isinstance(v, torch.Tensor)
    ]
    return {"inputs": inputs, "state": state}


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
        return [(STATE, NotTaken(f"state not read after the call: {first_line(exc)}"))]


def is_state(path: str) -> bool:
    return path == STATE or path.startswith(STATE + ".")


def tensor_leaves(leaves: Leaves) -> int:
    """Tensor leaves of the output (state leaves are not outputs)."""
    return sum(1 for p, v in leaves if isinstance(v, torch.Tensor) and not is_state(p))
