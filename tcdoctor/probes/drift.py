"""Where compiled numbers drift: the deepest module whose own compiled output drifts beyond tolerance
while its inputs were exact.

Runs only when the numerics phase failed or came within 2× of its tolerance on some output
(`needed`); otherwise it returns the one line the report shows and runs nothing.

Method. One eager call of a fresh copy with a forward hook on every submodule records, for the
first call of each module, the inputs it really received (positional and keyword, cloned) and its
output. Then, on those exact inputs, each module is run three ways: eager (its recorded output),
in float64 (the module in a float64 copy of the model, on the inputs cast to float64), and compiled.
The compiled side is ONE `torch.compile` (the analysis's backend and mode) of a wrapper that calls
every recorded module on its own recorded inputs, so the whole tree costs one compile. Each module's
output leaves are judged as the numerics phase judges the model's (`numerics.compare_leaf`: the
harness's `same` rule, tolerance by dtype), and its error relative to tolerance is
rmse(compiled, fp64) / (m·rmse(eager, fp64) + tol/10), the quantity that rule compares with 1
(max|compiled - eager| / tol where there is no fp64). From the root, the walk descends into the child
with the largest ratio while that child fails the rule; the module where it stops is the origin:
its own output drifts while every child, fed exact inputs, does not (or it has no children).

Then, where the model was loaded from a target file and the backend is Inductor, PyTorch's
`CompilerBisector` runs on the origin alone in a fresh process (`python -m
tcdoctor.probes.bisect_module TARGET MODULE`, waited on for BISECT_TIMEOUT_S): the backend, subsystem
(pass, config change, lowering) it blames, and that command so the user can rerun it; otherwise
`not_run` says why. The analysis plans "compile around it" (experiments/fixes.py, DisableModuleFix),
measured in a fresh process as every fix is.

Pitfalls: a module compiled on its own may round differently than inside the whole model's graph
(Inductor fuses across module boundaries): the origin is where drift arises on exact inputs, not a
replay of the failing call's fusions. A module called several times is judged on its first call. A
module whose inputs hold no tensor, or that raises when called alone, is left out (`skipped`). At
most MAX_MODULES modules (breadth-first) are compared. The RNG is reset before each side; a module
that draws random numbers is compared only where numerics compared the model (fallback_random).
"""

from __future__ import annotations

import copy
import inspect
import json
import sys
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

from ..report.numerics_row import NumericsRow
from ..report.sections import Numerics
from ..target.pristine import reset_rng_state
from .context import PhaseContext
from .first_call import build
from .numerics import compare_leaf, to_fp64

MAX_MODULES = 200
NEAR = 2.0  # the numerics error within this factor of its tolerance also triggers the search

METHOD = (
    "forward hooks on an eager call record each module's real inputs and output; each module is "
    "then run on those exact inputs in float64 and compiled (one torch.compile of a wrapper calling "
    "every module, the analysis's backend and mode) and judged by the numerics rule (harness same(), "
    "tolerance by dtype); error/tol = rmse(compiled, fp64) / (m*rmse(eager, fp64) + tol/10); from the "
    "root, descend into the child with the largest error/tol while it fails; the origin is where the "
    "descent stops"
)


def needed(numerics: Numerics) -> str | None:
    """Why the search runs (failed, or within NEAR× of tolerance), None when numerics passed with margin."""
    if numerics.not_measured:
        return None
    if numerics.passed is False:
        return "numerics failed"
    for o in numerics.outputs or []:
        err, tol = o.max_abs_err, o.tol
        if err is not None and tol and err * NEAR > tol and o.within_allclose is False:
            return f"{o.path}: error {err:.3g} within {NEAR:g}x of tolerance {tol:g}"
    return None


def phase_drift(ctx: PhaseContext) -> dict:
    """The phase (run/runner.py's PhaseRunner as `ctx`): runs the search only when `needed`."""
    if ctx.results.get("numerics") is None:
        return {"not_measured": "the numerics phase did not finish"}
    numerics = Numerics.from_dict(ctx.results["numerics"])  # the phase's result, typed
    why = needed(numerics)
    if why is None:
        reason = numerics.not_measured or "numerics passed with margin (within half the tolerance)"
        return {"checked": False, "reason": reason, "method": "not run: " + NEED_TEXT}
    if ctx.workload.kind == "train":
        return {
            "not_measured": "a training step: its submodules' outputs are not compared alone yet"
        }
    subject = ctx.fresh()
    if not isinstance(subject.fn, torch.nn.Module):
        return {"not_measured": "the called object is not an nn.Module: no submodules to compare"}
    w, opts = ctx.workload, ctx.options

    def compile_fn(m: torch.nn.Module) -> Any:
        return build(m, opts.backend, opts.mode, w.compile_kwargs)

    out = localise(
        subject.fn,
        lambda: ctx.call(subject.fn),
        compile_fn,
        w.autocast,
        why,
        lambda: w.context(ctx.device.type),
    )
    if out["origin"] and out["origin"]["name"]:  # PyTorch's bisector on it, in a fresh process
        out["bisector"] = run_bisector(w, out["origin"]["name"], opts.backend)
    return out


NEED_TEXT = f"searched when numerics fail or an output's error is within {NEAR:g}x of its tolerance"


BISECT_MODULE = "tcdoctor.probes.bisect_module"
BISECT_TIMEOUT_S = 240  # the drift phase waits this long for the bisector's process


def target_of(workload: Any) -> str | None:
    """The `path.py:function` this process loaded the workload from (target/load.py names its module
    `_tcdoctor_target_<stem>` and the workload `<file>:<function>`); None in the in-process API."""
    name = getattr(workload, "name", None) or ""
    file, _, func = name.rpartition(":")
    mod = sys.modules.get("_tcdoctor_target_" + file.rsplit(".", 1)[0]) if file else None
    path = getattr(mod, "__file__", None)
    return f"{path}:{func}" if path and func else None


def run_bisector(workload: Any, module: str, backend: str) -> dict:
    """The bisector in a fresh process on `module` alone: its verdict and the command, or why not."""
    import subprocess

    target = target_of(workload)
    if target is None:
        return {
            "not_run": "the workload was not loaded from a target file (in-process API): a fresh "
            "process cannot rebuild it"
        }
    if backend != "inductor":
        return {
            "not_run": f"CompilerBisector bisects Inductor; this analysis used backend {backend!r}"
        }
    cmd = bisect_command(target, module, backend)
    try:
        p = subprocess.run(
            [sys.executable, "-m", BISECT_MODULE, target, module, "--backend", backend],
            capture_output=True,
            text=True,
            timeout=BISECT_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return {
            "not_run": f"it ran over {BISECT_TIMEOUT_S} s (each step is a compile)",
            "command": cmd,
        }
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1][:300]
        return {"not_run": f"its process failed: {tail}", "command": cmd}
    return json.loads(lines[-1])


def bisect_command(target: str, module: str, backend: str) -> str:
    """The line a user runs to bisect `module` of `target` (what the report prints)."""
    return f"python -m tcdoctor.probes.bisect_module {target} {module} --backend {backend}"


def _clone(obj: Any) -> Any:
    return pytree.tree_map(lambda x: x.detach().clone() if isinstance(x, torch.Tensor) else x, obj)


def record(model: torch.nn.Module, call: Callable[[], Any]) -> dict[str, tuple]:
    """{qualified name: (args, kwargs, output)} of each module's first call in one eager call."""
    seen: dict[str, tuple] = {}
    handles = []

    def hook(name: str) -> Callable:
        def fn(_mod: Any, args: tuple, kwargs: dict, out: Any) -> None:
            if name not in seen:
                seen[name] = (_clone(args), _clone(kwargs), _clone(out))

        return fn

    for name, mod in model.named_modules():
        handles.append(mod.register_forward_hook(hook(name), with_kwargs=True))
    try:
        reset_rng_state()
        call()
    finally:
        for h in handles:
            h.remove()
    return seen


class _Every(torch.nn.Module):
    """Calls each recorded module on its own recorded inputs: one graph for the whole tree."""

    def __init__(self, mods: list[torch.nn.Module]):
        super().__init__()
        self.mods = torch.nn.ModuleList(mods)

    def forward(self, inputs: list[tuple]) -> list:
        return [m(*a, **k) for m, (a, k) in zip(self.mods, inputs)]


def _breadth_first(names: list[str]) -> list[str]:
    return sorted(names, key=lambda n: (0 if n == "" else n.count(".") + 1, names.index(n)))


def _has_tensor(obj: Any) -> bool:
    return any(isinstance(x, torch.Tensor) for x in pytree.tree_leaves(obj))


def _leaves(obj: Any) -> list[tuple[str, Any]]:
    pairs, _ = pytree.tree_flatten_with_path(obj)
    return [(pytree.keystr(k) or "out", v) for k, v in pairs]


def judge_module(name: str, eager: Any, compiled: Any, fp64: Any, tol_dtype: Any) -> dict:
    """Worst leaf of one module's output: passed, error/tol, compiled and eager rmse vs fp64."""
    refs = dict(_leaves(fp64)) if fp64 is not None else {}
    worst: dict = {"passed": True, "ratio": 0.0}
    for (path, e), (_, c) in zip(_leaves(eager), _leaves(compiled)):
        if not isinstance(e, torch.Tensor) or not e.is_floating_point():
            continue
        row = compare_leaf(path, e, c, refs.get(path), tol_dtype)
        ratio = _ratio(row)
        if ratio >= worst["ratio"] or row.passed is False and worst["passed"]:
            worst = {
                "passed": bool(row.passed) and worst["passed"],
                "ratio": ratio,
                "err_vs_fp64": row.compiled_rmse_vs_fp64,
                "eager_err_vs_fp64": row.eager_rmse_vs_fp64,
                "max_abs_err": row.max_abs_err,
                "tol": row.tol,
                "leaf": path,
            }
    return worst


def _ratio(row: NumericsRow) -> float:
    tol = row.tol or 1e-4
    c, e, m = row.compiled_rmse_vs_fp64, row.eager_rmse_vs_fp64, row.multiplier
    if c is not None and e is not None and m:
        return c / (m * e + tol / 10)
    return (row.max_abs_err or 0.0) / tol


def _class_site(mod: torch.nn.Module) -> tuple[str | None, int | None]:
    cls = type(mod)
    try:
        return inspect.getsourcefile(cls), inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        return None, None


def _compiled_outputs(
    model: torch.nn.Module,
    names: list[str],
    rec: dict,
    compile_fn: Callable[[Any], Any],
    context: Callable[[], Any],
) -> list:
    mods = [model.get_submodule(n) for n in names]
    every = compile_fn(_Every(mods))
    reset_rng_state()
    with context():
        return every([(rec[n][0], rec[n][1]) for n in names])


def _fp64_outputs(model: torch.nn.Module, names: list[str], rec: dict) -> tuple[dict, str | None]:
    try:
        m64 = copy.deepcopy(model).to(torch.float64)
    except Exception as exc:  # noqa: BLE001 - reported
        return {}, f"no float64 copy: {type(exc).__name__}: {exc}"[:300]
    out = {}
    with torch.no_grad():
        for n in names:
            try:
                reset_rng_state()
                out[n] = m64.get_submodule(n)(*to_fp64(rec[n][0]), **to_fp64(rec[n][1]))
            except Exception:  # noqa: BLE001 - that module is judged without fp64
                out[n] = None
    return out, None


def localise(
    model: torch.nn.Module,
    call: Callable[[], Any],
    compile_fn: Callable[[Any], Any],
    tol_dtype: torch.dtype | None,
    why: str,
    context: Callable[[], Any] = torch.no_grad,
) -> dict:
    """The search on `model` (a fresh copy: it is called eagerly once, then compiled in parts);
    `context` is held around the compiled call (no_grad, autocast as the workload's call)."""
    rec = record(model, call)
    names = [n for n in _breadth_first(list(rec)) if _has_tensor(rec[n][:2])][:MAX_MODULES]
    compiled = dict(zip(names, _compiled_outputs(model, names, rec, compile_fn, context)))
    fp64, fp64_why = _fp64_outputs(model, names, rec)
    judged = {n: judge_module(n, rec[n][2], compiled[n], fp64.get(n), tol_dtype) for n in names}
    path = _descend(model, judged)
    origin = path[-1] if path and not path[-1]["passed"] else None
    return {
        "checked": True,
        "reason": why,
        "origin": origin,
        "path": path,
        "modules_compared": len(names),
        "skipped": sorted(set(rec) - set(names)),
        "fp64_unavailable_why": fp64_why,
        "method": METHOD,
    }


def _descend(model: torch.nn.Module, judged: dict[str, dict]) -> list[dict]:
    """Root, then the worst failing child, down to where no child fails."""
    if "" not in judged:
        return []
    path, name = [], ""
    while True:
        mod = model.get_submodule(name)
        file, line = _class_site(mod)
        path.append(
            dict(
                judged[name],
                name=name,
                **{"class": type(mod).__name__},
                class_file=file,
                class_line=line,
            )
        )
        kids = [f"{name}.{k}" if name else k for k, _ in mod.named_children()]
        kids = [k for k in kids if k in judged]
        if not kids or path[-1]["passed"]:
            return path
        worst = max(kids, key=lambda k: judged[k]["ratio"])
        if judged[worst]["passed"]:
            return path
        name = worst
