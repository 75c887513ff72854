"""Where a patch is proven: the target's folder mirrored, the eager calls made and captured, the
user's frames traced (in the patch's own child).

Method.
- `mirror`: the target's folder copied into a temporary folder (Python files copied, they are
  imported from there; other files linked, data the model reads stays where it is; caches, VCS
  data and virtual environments left out). `drop_user_modules` forgets the user's modules so the
  copy's are imported instead.
- `eager`: one eager call on a pristine copy (every RNG reset), its outputs and buffers snapshotted
  (for a training step the parameters and gradients after it too), with stdout, warnings and log
  records captured (`captured`: at every level).
- `traced`: `sys.settrace` on the frames of one file (of one function, when named), the one place
  a trace function is set; `observe` records what a line (or a whole function call) read and
  produced, for the rules that need the eager run first.

Pitfalls: a trace function sees the current thread only, and costs every call it sees: it is set
for one eager call at a time, never around a timed or compiled call. Log records are caught with
the root logger lowered to DEBUG for the block: a guarded `logger.info` under the default WARNING
level would otherwise write nothing, and "equal" would compare two empty lists.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import sys
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from .. import rewrite

# folders never copied with the target's folder: VCS data, caches, virtual environments
SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    "node_modules",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
}
MIRROR_LIMIT = 20_000  # files and folders; a larger folder is not copied (the patch is not tried)

TraceFn = Callable[[Any, str, Any], Any]


# -- the copy -----------------------------------------------------------------------------------


def mirror(root: str, dest: str) -> None:
    """The target's folder at `dest`: Python files copied (they are imported from there), every
    other file linked (data the model reads stays where it is), SKIP_DIRS and virtual
    environments left out."""
    count = 0
    for here, dirs, files in os.walk(root):
        dirs[:] = [
            d
            for d in dirs
            if d not in SKIP_DIRS
            and d not in ("site-packages", "dist-packages")
            and not os.path.isfile(os.path.join(here, d, "pyvenv.cfg"))
            and not d.endswith(".egg-info")
        ]
        rel = os.path.relpath(here, root)
        out = os.path.join(dest, rel) if rel != os.curdir else dest
        os.makedirs(out, exist_ok=True)
        count += len(dirs) + len(files)
        if count > MIRROR_LIMIT:
            raise RuntimeError(
                f"the target's folder holds over {MIRROR_LIMIT:,} files: not copied for the patch"
            )
        for name in files:
            src = os.path.join(here, name)
            if name.endswith(".py"):
                shutil.copy2(src, os.path.join(out, name))
            else:
                os.symlink(src, os.path.join(out, name))


def drop_user_modules(root: str) -> None:
    """Forget the user's modules imported from `root`, so the copy's are imported instead: only
    the user's own files (a virtual environment, site-packages or tcdoctor itself inside the
    target's folder stay imported, as the mirror leaves them out)."""
    from ...target.userframes import is_user_file

    prefix = os.path.realpath(root) + os.sep
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if path and os.path.realpath(path).startswith(prefix) and is_user_file(path):
            if not set(os.path.relpath(path, root).split(os.sep)) & SKIP_DIRS:
                del sys.modules[name]
    with contextlib.suppress(ValueError):
        sys.path.remove(root)


def module_at(path: str) -> Any:
    """The imported module whose file is `path` (None: none is)."""
    real = os.path.realpath(path)
    return next(
        (
            m
            for m in list(sys.modules.values())
            if getattr(m, "__file__", None) and os.path.realpath(m.__file__) == real
        ),
        None,
    )


# -- eager calls, captured ----------------------------------------------------------------------


@contextlib.contextmanager
def captured() -> Iterator[dict]:
    """stdout, warnings and log records of the block, as text a second run must repeat. Records
    are caught at every level (the root logger lowered to DEBUG, its own handlers set aside for
    the block): a guarded `logger.info` under the default WARNING level would otherwise write
    nothing, and "equal" would compare two empty lists."""
    got: dict = {"stdout": "", "warnings": [], "logs": []}
    records: list[logging.LogRecord] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = _Keep(level=0)
    root = logging.getLogger()
    saved_level, saved_handlers = root.level, list(root.handlers)
    root.handlers = [handler]
    root.setLevel(logging.DEBUG)
    out = io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
            warnings.simplefilter("always")
            yield got
    finally:
        root.handlers = saved_handlers
        root.setLevel(saved_level)
        got["stdout"] = out.getvalue()
        got["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
        got["logs"] = [f"{r.name} {r.levelname}: {r.getMessage()}" for r in records]


def buffers(model: Any) -> dict:
    """A module's buffers by name (empty for anything that is not a module)."""
    named = getattr(model, "named_buffers", None)
    return dict(named()) if callable(named) else {}


def eager(w: Any, fresh: Callable[[], Any], ca: Any, device: Any) -> tuple[Any, dict]:
    """One eager call on a pristine copy, RNG reset: its snapshot (outputs and buffers after it;
    for a training step, the parameters and gradients after it too) and what it printed, warned
    and logged."""
    from ...probes import outputs
    from ...target.pristine import reset_rng_state
    from ..pair import caller

    copy_ = fresh()
    if w.kind == "train":
        from ..training import StepRunner

        fn: Any = StepRunner(copy_, "eager")
    else:
        fn = copy_.model
    reset_rng_state()
    with captured() as said:
        out = caller(w, device)(fn, ca)
    leaves: Any = {"out": out, "buffers": buffers(copy_.model)}
    if w.kind == "train":
        params = dict(copy_.model.named_parameters())
        leaves["params"] = params
        leaves["grads"] = {n: p.grad for n, p in params.items() if p.grad is not None}
    return outputs.snapshot(leaves), said


def calls(w: Any) -> list[tuple[str, Any]]:
    """The workload's calls an eager comparison makes: its inputs, then each input variant (a
    state change such as `m.train()` is not a call of its own)."""
    from ...target.workload import is_state_change

    out = [("the workload's inputs", w.call_args)]
    for i, v in enumerate(getattr(w, "variants", None) or []):
        if not is_state_change(v):
            out.append((f"variant {i + 1}", w.variant_args(v)))
    return out


def joined(said: list[dict]) -> dict:
    """What several calls printed, warned and logged, in call order."""
    return {
        "stdout": "".join(s["stdout"] for s in said),
        "warnings": [x for s in said for x in s["warnings"]],
        "logs": [x for s in said for x in s["logs"]],
    }


def same(a: Any, b: Any, autocast: Any, why: str = "patched vs original, both eager") -> dict:
    """Two snapshots compared by the numerics rule (probes/numerics.py)."""
    from ...probes import numerics

    return numerics.compare(a, b, None, why, autocast)


def grads(w: Any, model: Any, ca: Any, device: Any) -> dict | str:
    """The parameters' gradients of the sum of the output's floating-point tensors, one call with
    grad enabled (RNG reset), or why there are none."""
    import torch

    from ...probes import outputs
    from ...target.pristine import reset_rng_state

    reset_rng_state()
    with torch.enable_grad(), w.forward_context():
        out = ca.apply(model)
        leaves = [
            v
            for _, v in outputs.flatten(out)
            if isinstance(v, torch.Tensor) and v.is_floating_point() and v.requires_grad
        ]
        if not leaves:
            return "no output carries a gradient"
        sum(v.float().sum() for v in leaves).backward()  # type: ignore[union-attr]
    named = getattr(model, "named_parameters", None)
    params = dict(named()) if callable(named) else {}
    return {n: p.grad for n, p in params.items() if p.grad is not None}


# -- tracing the user's frames ------------------------------------------------------------------


def traced(path: str, local: TraceFn, run: Callable[[], Any], function: str | None = None) -> Any:
    """`run()` with `local` tracing every frame of the file `path` (of `function` only, when
    named): `local` sees each such frame's "call" event first, then the events it asks for by
    returning itself (None: no more events of that frame). The one place a trace function is set,
    and always unset after."""
    real = os.path.realpath(path)

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        code = frame.f_code
        if event == "call" and os.path.realpath(code.co_filename) == real:
            if function is None or code.co_name == function:
                return local(frame, event, arg)
        return None

    sys.settrace(tracer)
    try:
        return run()
    finally:
        sys.settrace(None)


def describe(value: Any) -> dict:
    """A value as a rule reads it: a tensor or a NumPy array (shape, dtype), else its type."""
    import torch

    if isinstance(value, torch.Tensor):
        return {
            "type": "tensor",
            "shape": list(value.shape),
            "dtype": str(value.dtype).replace("torch.", ""),
            "device": value.device.type,
        }
    if type(value).__module__ == "numpy" and hasattr(value, "dtype") and hasattr(value, "shape"):
        return {"type": "ndarray", "shape": list(value.shape), "dtype": str(value.dtype)}
    for t in (bool, int, float):
        if isinstance(value, t):
            return {"type": t.__name__}
    if isinstance(value, tuple) and value:
        return {"type": "tuple", "items": [describe(v) for v in value]}
    return {"type": type(value).__name__}


def _local(frame: Any, name: str) -> Any:
    """A local's value, or an attribute of one (`self.gain`)."""
    head, _, attr = name.partition(".")
    value = frame.f_locals.get(head)
    return getattr(value, attr, None) if attr else value


def _bound(frame: Any, target: str) -> Any:
    """The value a line binds: one name's, or (`vals, vecs`) the tuple of several names', once
    every one is bound."""
    if "," not in target:
        return frame.f_locals.get(target)
    values = tuple(frame.f_locals.get(n.strip()) for n in target.split(","))
    return None if any(v is None for v in values) else values


def _line_watch(need: rewrite.Need, seen: dict) -> TraceFn:
    """Line `need.line`'s inputs when it starts, and its result at the first later event where
    the target name holds a new value."""
    names, target = list(need.inputs), need.output

    def local(frame: Any, event: str, _arg: Any) -> Any:
        if "output" in seen:
            return None
        if event == "line" and frame.f_lineno == need.line and "inputs" not in seen:
            loc = frame.f_locals
            seen["inputs"] = {n: loc.get(n) for n in names}
            seen["before"] = _bound(frame, target)
        elif "inputs" in seen and event in ("line", "return"):
            value = _bound(frame, target)
            if value is not None and value is not seen["before"]:
                seen["output"] = value
        return local

    return local


def _call_watch(need: rewrite.Need, seen: dict) -> TraceFn:
    """The function's first call: its arguments when it is called, and the value it returns."""
    names = list(need.inputs)

    def local(frame: Any, event: str, arg: Any) -> Any:
        if "output" in seen:
            return None
        if event == "call" and "inputs" not in seen:
            seen["inputs"] = {n: _local(frame, n) for n in names}
            seen["frame"] = id(frame)
        elif event == "return" and seen.get("frame") == id(frame):
            seen["output"] = arg
        return local

    return local


def observe(
    w: Any, fresh: Callable, device: Any, path: str, need: rewrite.Need, ca: Any
) -> tuple[dict, tuple] | None:
    """What `need` names in `path` read and produced in one eager call of the original on `ca`
    (None: it did not run): a line's inputs and the name it binds, or (`need.whole`) a function's
    arguments and return value. The values are described for the rule, and the inputs kept (as
    detached clones) for the proof to call the op on."""
    from ..pair import caller

    seen: dict = {}
    watch = _call_watch(need, seen) if need.whole else _line_watch(need, seen)
    copy_ = fresh()
    traced(path, watch, lambda: caller(w, device)(copy_.model, ca), need.function)
    if "inputs" not in seen or "output" not in seen:
        return None
    inputs = seen["inputs"]
    observed = {
        "inputs": {n: describe(v) for n, v in inputs.items()},
        "output": describe(seen["output"]),
    }
    args = tuple(v.detach().clone() if hasattr(v, "detach") else v for v in inputs.values())
    return observed, args
