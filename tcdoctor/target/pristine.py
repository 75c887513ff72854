"""Pristine state: what build() returned, before any call, handed out as identical fresh copies.

Models change as they run: a scheduler decays the learning rate, BatchNorm moves its running
statistics, caches and counters grow, an optimizer steps. A figure taken from a model that earlier
phases have already called thousands of times describes a different model: numerics would
compare outputs from two points in its life, and a recompile sequence fed after the timing loop
may no longer change anything. So every consumer (each side of a numerics comparison, the
recompile sequence, each strategy) gets its own deep copy of the workload as build() returned it.
Where a deep copy fails, build() is called again for each copy (with the RNG reset first, so its
random weights are the same), and the report says so.

What `copy.deepcopy` loses (verified on torch 2.13), and is carried over from the original here
(`faithful_deepcopy`: one deepcopy with an explicit memo, whose keep-alive list
`memo[id(memo)]` holds every original and `memo[id(original)]` its copy):
- a parameter's `.grad` (`Parameter.__deepcopy__` copies only data and requires_grad; a plain
  tensor's deepcopy keeps it). PyTorch's "Compiling the optimizer" recipe returns `opt.step` after
  a backward in build(): a copy without gradients steps nothing (Adam over four 1024x1024 layers:
  ~30 µs per step instead of ~11 ms);
- a parameter's own attributes (`p.foo = ...`) and any tensor's hooks (`register_hook`,
  `register_post_accumulate_grad_hook`);
- an optimizer's hooks and every attribute but `defaults`, `state` and `param_groups`
  (`Optimizer.__getstate__`), among them the wrapper an LR scheduler installs as `opt.step`. A
  deepcopy shares a function, and that wrapper steps the original optimizer through a weak
  reference, so a function attribute is rebuilt over copies of its closure (the weak reference
  then refers to the copy); one that cannot be is left out, and the fidelity check below sees
  what that leaves different.
Optimizer state and `param_groups` are kept by deepcopy itself, keyed by the copy's parameters.

Fidelity check (`Pristine.verify`, once per analysis process, before anything is measured and
outside every timed or compiled path): a fresh copy and the original are each called once, RNG
reset before each; their outputs (tensors, Python scalars) and every tensor reachable from each
(attributes, containers, closures, globals a function names, weak references, `.grad`) are
compared exactly, in pairs found by walking both object graphs side by side. Tensors the copy
shares with the original (a deepcopy does not copy a function, so a closure over a model shares
it) are cloned before the calls; one that a call changed means the copies are not independent.
Verdicts: "same" (the caller may use that copy as one already called once); "differs" (build() is
then called again for every copy, RNG reset first, and the method says why); "inconclusive" when
a second copy's call differs from the first copy's too (the call is not deterministic, e.g. a
Python-level random source or GPU kernels with atomics, so no exact comparison can tell): copies
are kept and the method says so. Pitfalls: the original is called,
so only a process that built it itself (`rebuild` given) may run the check, never the in-process
API, whose object is the user's; state reachable only through objects the walk does not enter
(slots, C++ objects, a function's module's attributes) is not compared; a difference that only a
second call would show is not seen.

RNG: before every compared call all generators are reset as PyTorch's accuracy harness does
(`torch._dynamo.testing.reset_rng_state`: torch, CUDA, Python `random`, NumPy when importable).
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import random
import time
import types
import weakref
from collections.abc import Mapping
from typing import Any, Callable

import torch

RNG_SEED = 1337  # the harness's seed
MAX_OBJECTS = 200_000  # objects a fidelity walk enters before it stops (and says so)
SHOWN = 5  # differences named in the method string
_GETSTATE = ("defaults", "state", "param_groups")  # what Optimizer.__getstate__ keeps
_HOOKS = ("_backward_hooks", "_post_accumulate_grad_hooks")
_SCALARS = (bool, int, float, complex, str, bytes, type(None))
_OPAQUE = (types.ModuleType, type, types.CodeType, torch.dtype, torch.device)


def reset_rng_state() -> None:
    """Seed torch (and CUDA), Python's random and NumPy, as torch._dynamo.testing.reset_rng_state does."""
    try:
        from torch._dynamo.testing import reset_rng_state as harness_reset

        harness_reset()
        return
    except Exception:  # noqa: BLE001 - private API; do what it does
        pass
    torch.manual_seed(RNG_SEED)
    random.seed(RNG_SEED)
    try:
        import numpy

        numpy.random.seed(RNG_SEED)
    except ImportError:
        pass


# -- a deep copy that keeps what deepcopy drops ---------------------------------------------


@dataclasses.dataclass
class Carried:
    """What one faithful copy carried over from the original beyond what deepcopy keeps."""

    grads: int = 0
    attributes: int = 0
    hooks: int = 0
    not_carried: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        parts = [
            f"{n} {what}{'s' if n > 1 else ''}"
            for n, what in (
                (self.grads, "gradient"),
                (self.attributes, "attribute"),
                (self.hooks, "hook table"),
            )
            if n
        ]
        text = f"; carried over what deepcopy drops: {', '.join(parts)}" if parts else ""
        if self.not_carried:
            text += f"; not carried: {', '.join(sorted(set(self.not_carried)))}"
        return text


def faithful_deepcopy(obj: Any) -> tuple[Any, Carried]:
    """`copy.deepcopy(obj)` plus gradients, tensor attributes and hooks, optimizer hooks/attributes."""
    memo: dict = {}
    dup = copy.deepcopy(obj, memo)
    carried = Carried()
    for orig in list(memo.get(id(memo), ())):
        twin = memo.get(id(orig))
        if twin is None or twin is orig:
            continue
        if isinstance(orig, torch.Tensor) and isinstance(twin, torch.Tensor):
            _carry_tensor(orig, twin, memo, carried)
        elif isinstance(orig, torch.optim.Optimizer) and type(twin) is type(orig):
            _carry_optimizer(orig, twin, memo, carried)
    return dup, carried


def _carry_tensor(orig: torch.Tensor, twin: torch.Tensor, memo: dict, carried: Carried) -> None:
    """`.grad`, own attributes and hook tables: what `Parameter.__deepcopy__` leaves behind."""
    try:
        if orig.is_leaf and twin.is_leaf and orig.grad is not None and twin.grad is None:
            twin.grad = copy.deepcopy(orig.grad, memo)
            carried.grads += 1
        own, theirs = getattr(orig, "__dict__", None) or {}, getattr(twin, "__dict__", None)
        for name, value in own.items():
            if theirs is not None and name not in theirs:
                setattr(twin, name, copy.deepcopy(value, memo))
                carried.attributes += 1
        for name in _HOOKS:
            table = getattr(orig, name, None)
            if table and not getattr(twin, name, None):
                setattr(twin, name, copy.deepcopy(table, memo))
                carried.hooks += 1
    except Exception as exc:  # noqa: BLE001 - a subclass may refuse; the fidelity check sees it
        carried.not_carried.append(f"tensor state ({type(exc).__name__})")


def _carry_optimizer(orig: Any, twin: Any, memo: dict, carried: Carried) -> None:
    """Attributes and hook tables that `Optimizer.__getstate__` leaves out, functions excepted."""
    for name, value in vars(orig).items():
        have = vars(twin).get(name, _MISSING)
        if name in _GETSTATE or (have is not _MISSING and not _empty_for_full(have, value)):
            continue
        try:
            dup = copy.deepcopy(value, memo)
            if dup is value and callable(value):  # deepcopy shares functions: rebind its closure
                dup = _rebound(value, memo)
        except Exception:  # noqa: BLE001 - left out; the fidelity check sees what that changes
            dup = None
        if dup is None:
            carried.not_carried.append(f"optimizer.{name}")
            continue
        setattr(twin, name, dup)
        if "hook" in name:
            carried.hooks += 1
        else:
            carried.attributes += 1


_MISSING = object()


def _rebound(f: Any, memo: dict) -> Any:
    """A closure rebuilt over copies of its cells (a weak reference to an original that was
    copied now refers to the copy), or None for anything else. An LR scheduler replaces
    `opt.step` with a wrapper holding a weak reference to its optimizer: the copy's optimizer
    gets a wrapper that steps the copy, as the original's steps the original."""
    if not isinstance(f, types.FunctionType) or not f.__closure__:
        return None
    cells = []
    for cell in f.__closure__:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            cells.append(types.CellType())
            continue
        if isinstance(value, weakref.ref):
            target = value()
            value = weakref.ref(memo[id(target)]) if id(target) in memo else value
        else:
            value = copy.deepcopy(value, memo)
        cells.append(types.CellType(value))
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, tuple(cells))
    g.__kwdefaults__, g.__qualname__, g.__doc__ = f.__kwdefaults__, f.__qualname__, f.__doc__
    g.__module__ = f.__module__
    g.__dict__.update(copy.deepcopy(f.__dict__, memo))  # functools.wraps: __wrapped__, flags
    return g


def _empty_for_full(have: Any, value: Any) -> bool:
    """An empty table the copy re-created where the original's has entries (hook tables)."""
    return isinstance(have, Mapping) and not have and isinstance(value, Mapping) and bool(value)


# -- walking the original and a copy side by side -------------------------------------------


@dataclasses.dataclass
class Walk:
    """Tensor pairs found at the same place in two object graphs, and where the graphs differ."""

    pairs: list[tuple[str, torch.Tensor, torch.Tensor]] = dataclasses.field(default_factory=list)
    diffs: list[str] = dataclasses.field(default_factory=list)
    complete: bool = True


def _kind(x: Any) -> str:
    return (
        "None" if x is None else ("a tensor" if isinstance(x, torch.Tensor) else type(x).__name__)
    )


def _simple_key(k: Any) -> bool:
    if isinstance(k, tuple):
        return all(_simple_key(i) for i in k)
    return isinstance(k, (str, int, float, bool, type(None), enum.Enum))


def _mapping_children(x: Mapping, y: Any) -> tuple[list, list[str]]:
    if not isinstance(y, Mapping):
        return [], [f": a mapping in the original, {_kind(y)} in the copy"]
    keys = list(x.keys())
    if all(_simple_key(k) for k in keys) and all(_simple_key(k) for k in y.keys()):
        kids, lost = [], []
        for k in keys:
            if k in y:
                kids.append((f"[{k!r}]", x[k], y[k]))
            elif _is_t(x[k]):
                lost.append(f"[{k!r}]: a tensor in the original, missing in the copy")
        return kids, lost
    if len(x) != len(y):  # keyed by objects (an optimizer's state by parameter): by position
        return [], [f": {len(x)} entries in the original, {len(y)} in the copy"]
    kids = []
    for i, ((kx, vx), (ky, vy)) in enumerate(zip(x.items(), y.items())):
        kids += [(f".keys()[{i}]", kx, ky), (f".values()[{i}]", vx, vy)]
    return kids, []


def _is_t(x: Any) -> bool:
    return isinstance(x, torch.Tensor)


def _function_children(f: types.FunctionType, g: Any) -> tuple[list, list[str]]:
    """Closure cells by name, and the globals it names that hold objects (not modules, classes,
    functions); for PyTorch's own functions the closure only."""
    if getattr(g, "__code__", None) is not f.__code__:
        return [], [": a different function in the copy"]
    kids = []
    for name, cf, cg in zip(f.__code__.co_freevars, f.__closure__ or (), g.__closure__ or ()):
        try:
            kids.append((f".<closure {name}>", cf.cell_contents, cg.cell_contents))
        except ValueError:  # an empty cell
            continue
    if (getattr(f, "__module__", None) or "").startswith("torch."):
        return kids, []  # PyTorch's own function: its closure only (an LR scheduler's step wrapper)
    skip = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)
    for name in f.__code__.co_names:
        if name in f.__globals__ and not isinstance(f.__globals__[name], skip):
            kids.append((f".<global {name}>", f.__globals__[name], g.__globals__.get(name)))
    return kids, []


def _children(x: Any, y: Any) -> tuple[list[tuple[str, Any, Any]], list[str]]:
    """One level down both graphs: (path suffix, x's child, y's child), and differences found."""
    if isinstance(x, Mapping):
        return _mapping_children(x, y)
    if isinstance(x, (list, tuple)):
        if len(x) != len(y):
            return [], [f": {len(x)} items in the original, {len(y)} in the copy"]
        return [(f"[{i}]", a, b) for i, (a, b) in enumerate(zip(x, y))], []
    if isinstance(x, weakref.ref):
        return [("()", x(), y())], []
    if isinstance(x, types.MethodType):
        return [(".__self__", x.__self__, y.__self__), ("", x.__func__, y.__func__)], []
    if isinstance(x, functools.partial):
        return [
            (".func", x.func, y.func),
            (".args", x.args, y.args),
            (".kw", x.keywords, y.keywords),
        ], []
    if isinstance(x, types.FunctionType):
        return _function_children(x, y)
    if isinstance(x, types.BuiltinMethodType):  # a tensor's method (x.add_): its tensor
        own = getattr(x, "__self__", None)
        return ([(".__self__", own, getattr(y, "__self__", None))] if _is_t(own) else []), []
    attrs = getattr(x, "__dict__", None)
    if not isinstance(attrs, dict) or isinstance(x, _OPAQUE):
        return [], []
    other = getattr(y, "__dict__", None) or {}
    kids = [(f".{k}", v, other[k]) for k, v in attrs.items() if k in other]
    lost = [
        f".{k}: a tensor in the original, missing in the copy"
        for k, v in attrs.items()
        if k not in other and _is_t(v)
    ]
    return kids, lost


def twins(a: Any, b: Any, root: str, scalars: bool = False) -> Walk:
    """Walk `a` (an original) and `b` (its copy) side by side: tensor pairs, `.grad` included.

    With `scalars`, Python scalars are compared too (outputs); in state they are not (an id, a
    time stamp or a counter a call does not use would make every copy "different").
    """
    walk, stack, seen = Walk(), [(root, a, b)], set()
    while stack:
        path, x, y = stack.pop()
        if _is_t(x) or _is_t(y):
            _tensor_pair(walk, stack, seen, path, x, y)
            continue
        if isinstance(x, _SCALARS):
            if scalars and not _same_scalar(x, y):
                walk.diffs.append(f"{path}: {x!r} in the original, {y!r} in the copy")
            continue
        if id(x) in seen:
            continue
        seen.add(id(x))
        if len(seen) > MAX_OBJECTS:
            walk.complete = False
            break
        if type(x) is not type(y):
            walk.diffs.append(f"{path}: {_kind(x)} in the original, {_kind(y)} in the copy")
            continue
        kids, diffs = _children(x, y)
        walk.diffs += [path + d for d in diffs]
        stack.extend((path + s, cx, cy) for s, cx, cy in reversed(kids))
    return walk


def _tensor_pair(walk: Walk, stack: list, seen: set, path: str, x: Any, y: Any) -> None:
    if not (_is_t(x) and _is_t(y)):
        walk.diffs.append(f"{path}: {_kind(x)} in the original, {_kind(y)} in the copy")
        return
    if id(x) in seen:
        return
    seen.add(id(x))
    walk.pairs.append((path, x, y))
    try:
        if x.is_leaf and y.is_leaf:
            stack.append((path + ".grad", x.grad, y.grad))
    except Exception:  # noqa: BLE001 - a tensor subclass may refuse .grad
        pass


def _same_scalar(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float) and x != x and y != y:
        return True  # both NaN
    return type(x) is type(y) and x == y


def same_tensor(x: torch.Tensor, y: torch.Tensor) -> bool | None:
    """Exactly equal (NaN equal to NaN), or None where the values cannot be compared (meta, ...)."""
    if x is y:
        return True
    try:
        if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
            return False
        if x.is_meta:
            return None
        a, b = x.detach(), y.detach()
        if torch.equal(a, b):
            return True
        if a.is_floating_point() or a.is_complex():
            return bool(torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True))
        return False
    except Exception:  # noqa: BLE001 - sparse, quantized or subclass tensors may refuse
        return None


def _storage(t: torch.Tensor) -> tuple | None:
    try:
        ptr = t.untyped_storage().data_ptr()
        return (str(t.device), ptr) if ptr else None
    except Exception:  # noqa: BLE001 - no storage (meta, sparse, subclass)
        return None


def _shared(walk: Walk) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """The copy's tensors that live in the original's memory, each with a clone taken now."""
    theirs = {_storage(x) for _, x, _ in walk.pairs} - {None}
    out = []
    for path, _, y in walk.pairs:
        if _storage(y) in theirs:
            out.append((path, y, y.detach().clone()))
    return out


# -- the check ------------------------------------------------------------------------------


def _attempt(call: Callable[[Any], Any], workload: Any) -> tuple[Any, BaseException | None]:
    try:
        return call(workload), None
    except Exception as exc:  # noqa: BLE001 - the user's call may raise anything
        return None, exc


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"[:200]


def differences(original: Any, out_o: Any, dup: Any, out_d: Any) -> tuple[list[str], int]:
    """Where a copy's call (`dup`, `out_d`) did other work than the original's: outputs, then state."""
    found, compared = [], 0
    for walk in (twins(out_o, out_d, "output", scalars=True), twins(original, dup, "workload")):
        found += walk.diffs
        for path, x, y in walk.pairs:
            same = same_tensor(x, y)
            compared += same is not None
            if same is False:
                found.append(f"{path}: different values")
        if not walk.complete:
            found.append(f"(walk stopped after {MAX_OBJECTS} objects)")
    return found, compared


class Pristine:
    """Fresh copies of a workload in the state build() returned, taken before any call."""

    def __init__(self, workload: Any, rebuild: Callable[[], Any] | None = None):
        self._rebuild = rebuild
        self._snapshot: Any = None
        self.shared = False
        self.check: dict = {"result": "not checked", "why": "no check was run"}
        try:
            self._snapshot, carried = faithful_deepcopy(workload)
            self.method = (
                "deep copy of what build() returned, taken before any call" + carried.describe()
            )
        except Exception as exc:  # noqa: BLE001 - any object may refuse to be copied
            why = _first_line(exc)
            if rebuild is not None:
                self.method = f"build() called again (RNG reset first) for each fresh copy: deep copy failed ({why})"
            else:
                self._snapshot, self.shared = workload, True
                self.method = f"NOT pristine: deep copy failed ({why}) and build() cannot be re-run here; calls share one model"

    @property
    def copies(self) -> bool:
        """True while fresh() hands out deep copies (not rebuilds, not the one shared object)."""
        return self._snapshot is not None and not self.shared

    def peek(self) -> Any:
        """The workload as build() returned it, to read and never to call: the snapshot itself (no
        copy is made), or a fresh one where each copy is a rebuild."""
        return self._snapshot if self._snapshot is not None else self.fresh()

    def fresh(self) -> Any:
        if self.shared:
            return self._snapshot
        if self._snapshot is None:
            reset_rng_state()
            return self._rebuild()  # type: ignore[misc]
        return faithful_deepcopy(self._snapshot)[0]

    def verify(self, original: Any, call: Callable[[Any], Any]) -> Any:
        """Call a fresh copy and `original` once each (`call` resets the RNG and calls one workload);
        if the copy's call did other work, switch to rebuilding. Returns the copy when it did the
        same (already called once), else None. `original` is called: it must be the caller's own."""
        t0 = time.perf_counter()
        if not self.copies:
            return self.skip("no deep copy is used", t0)
        dup = self.fresh()
        shared = _shared(twins(original, dup, "workload"))
        out_d, err_d = _attempt(call, dup)
        out_o, err_o = _attempt(call, original)
        if err_d is not None and err_o is not None:
            return self.skip(f"the first call raised {_first_line(err_o)}", t0)
        if err_d is not None or err_o is not None:
            who, err = ("copy's", err_d) if err_d is not None else ("original's", err_o)
            return self._differs([f"only the {who} call raised {_first_line(err)}"], 0, t0)
        changed = [p for p, t, before in shared if same_tensor(t, before) is False]
        if changed:
            return self._differs(
                [f"{p}: shared with the original and changed by a call" for p in changed], 0, t0
            )
        found, compared = differences(original, out_o, dup, out_d)
        if not found:
            return self._same(dup, compared, t0)
        second = self.fresh()
        out_2, err_2 = _attempt(call, second)
        noise = (
            [f"raised {_first_line(err_2)}"] if err_2 else differences(dup, out_d, second, out_2)[0]
        )
        if noise:
            return self._inconclusive(found, noise, compared, t0)
        return self._differs(found, compared, t0)

    # -- verdicts ---------------------------------------------------------------------------
    def _record(self, result: str, t0: float, **more: Any) -> None:
        self.check = {"result": result, **more, "seconds": time.perf_counter() - t0}

    def skip(self, why: str, t0: float | None = None) -> None:
        """No check made (and why): the method says so."""
        self._record("not checked", time.perf_counter() if t0 is None else t0, why=why)
        self.method += f"; fidelity not checked ({why})"
        return None

    def _same(self, dup: Any, compared: int, t0: float) -> Any:
        self._record("same", t0, tensors_compared=compared)
        self.method += (
            f"; checked before measuring: a copy's first call did what the original's did "
            f"(outputs and {compared} tensors of state identical)"
        )
        return dup

    def _differs(self, found: list[str], compared: int, t0: float) -> None:
        shown = "; ".join(found[:SHOWN]) + (
            f"; … {len(found) - SHOWN} more" if len(found) > SHOWN else ""
        )
        self._record("differs", t0, differences=found[:50], tensors_compared=compared)
        if self._rebuild is not None:
            self._snapshot = None
            self.method = (
                "build() called again (RNG reset first) for each fresh copy: a deep copy's first call "
                f"did other work than the original's ({shown})"
            )
        else:
            self.method = f"NOT faithful: a deep copy's first call did other work than the original's ({shown}), and build() cannot be re-run here"
        return None

    def _inconclusive(self, found: list[str], noise: list[str], compared: int, t0: float) -> None:
        self._record(
            "inconclusive",
            t0,
            differences=found[:50],
            between_copies=noise[:50],
            tensors_compared=compared,
        )
        self.method += (
            "; fidelity not established: two copies' first calls differ from each other too "
            f"({noise[0]}), so the call is not deterministic and copies are used as they are"
        )
        return None
