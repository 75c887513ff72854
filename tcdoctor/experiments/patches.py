"""Source patches for graph breaks in the user's own code: planned, applied to a copy, proven.

Plan (in the cold child, torch-free). Each graph break whose site is the user's own file (never a
file under site-packages or PyTorch) and lies in the target's folder gets the rewrite
`rewrite.plan` writes for it, or the reason there is none (listed as not tried, so a `.tolist()`
loop says "no mechanical patch" and why, and a `# tcdoctor: ignore[CODE]` says "suppressed"). A
break inside a library (scipy, numpy, any module outside torch) is planned at the user's line that
calls it, where only a rule that wraps the call (`Rule.library_calls`: the custom op) may answer;
the breaks one line reaches are one patch. Config switches that remove a break are planned before
patches (fixes.plan): a switch applies to the whole process, a patch to one line.

Proof (`run`, in a fresh child of its own, `PatchFix`). The user's file is only read, as bytes:

1. The rewrite is planned again from the file as it is now (its bytes' sha256 is kept, so
   `tcdoctor fix` can refuse a file that changed since; the text keeps CRLF line endings and a
   byte-order mark, so the diff touches only the patched lines). A rule that needs the eager run
   first (`needs_observation`: a custom op's shapes) gets what the line read and produced in an
   eager call of the original on the workload's inputs and on every input variant (`_observe`).
2. The target's folder is mirrored into a temporary folder (Python files copied, other files
   linked, caches and virtual environments left out) and the patched file written there; a
   symlinked file's diff names its real file (what `git apply` can patch).
3. The original is called eagerly on a pristine copy (RNG reset), with stdout, warnings and log
   records captured (at every level); the user's modules are dropped from `sys.modules`; the
   target is loaded again from the copy and called the same way. Outputs and buffers (and, for a
   training step, the parameters and gradients after the step) are compared by the numerics rule.
   Then each `Proof` the rewrite asks for is looked up in `PROOFS` and run: captured output equal
   where the patch guards it; for a branch rewrite, both branches on generated inputs and every
   variant; for a custom op, opcheck and the compiled copy on every variant.
4. Breaks are counted on the patched copy as the main analysis counts them (the cheap `eager`
   backend, PyTorch's graph-break log): fewer than before, and none at a site that had none
   (sites keyed by file, function and reason: a patch moves lines). Then the real backend measures
   the patched copy compiled against the ORIGINAL eager (`pair.timed_pair`: first call, paired
   timing, compiled numerics by the numerics rule): the patched eager may be slower (torch.cond
   in eager traces its branches on every call), so against it a gain would read larger than it is.
   Its speedup over the unpatched compiled model is the ratio of the two speedups, both against
   the same eager code.

A patch is verified only when every check holds; one that fails is listed with what failed.

Pitfalls. Two patches of one file are proven one at a time, each against the original file: the
diff file holds one verified patch per file (the best, report/sections/fixes.py `choose`), and the
report says to analyse again for the next. A branch rewrite is verified on the inputs tried only;
a patch in a file imported from outside the target's folder is not tried (the copy would not hold
it). A break reason may be empty: it is keyed as "".
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import shutil
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .specs import PatchFix

if TYPE_CHECKING:
    from . import rewrite

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
BRANCH_TRIES = 12  # generated inputs tried until both branches of a rewritten `if` were taken
COMPILE_CHECK_BACKEND = "aot_eager"  # a custom op's fake is exercised by AOT tracing


# -- plan (torch-free) --------------------------------------------------------------------------


def _rewrite() -> Any:
    """experiments/rewrite/, imported only where a break in the user's code is patched: libcst
    takes ~0.13 s to import, which an analysis with no such break never pays."""
    from . import rewrite

    return rewrite


def first_line(text: str | None) -> str:
    """The first line of a message ("" for an empty one: an empty break reason is a reason)."""
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _library_site(f: dict) -> bool:
    """A break inside a library outside torch, reached from a line of the user's file."""
    return f.get("origin") == "library" and f.get("library") not in (None, "", "torch")


def user_sites(results: dict) -> list[dict]:
    """The graph breaks whose site is the user's own file, one per (file, line), each with the ids
    of every break at that line (`ids`): the user's own breaks, and the breaks inside a library
    that the line calls (`library`: its name)."""
    gb = (results.get("graph_breaks") or {}).get("graph_breaks") or {}
    by_line: dict[tuple, dict] = {}
    for f in gb.get("unique") or []:
        key = (f.get("file"), f.get("line"))
        own = f.get("origin") == "user"
        if not (own or _library_site(f)) or not key[0] or not key[1]:
            continue
        if not os.path.isfile(key[0]):
            continue
        site = by_line.get(key)
        if site is None:
            site = by_line[key] = {**f, "ids": [], "library": None if own else f.get("library")}
        elif own and site.get("library"):  # the user's own break decides the line's reason
            site.update({k: f.get(k) for k in ("reason", "gb_id", "id")}, library=None)
        if f.get("id") and f["id"] not in site["ids"]:
            site["ids"].append(f["id"])
    return list(by_line.values())


def _name(path: str, line: int, root: str) -> str:
    return f"{os.path.relpath(path, root)}:{line}"


def _site(finding: dict) -> rewrite.Site:
    rewrite = _rewrite()
    return rewrite.Site(
        line=int(finding["line"]),
        gb_type=finding.get("reason") or "",
        gb_id=finding.get("gb_id"),
        file=finding.get("file"),
    )


def read_source(path: str) -> tuple[bytes, str]:
    """A file's bytes and its text (UTF-8; CRLF line endings and a byte-order mark kept)."""
    with open(path, "rb") as fh:
        raw = fh.read()
    return raw, raw.decode("utf-8")


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class _Planned:
    """A patch planned before any eager call: its rule, family, safety and title."""

    rule: str
    family: str
    safety: str
    title: str


def _provisional(source: str, site: rewrite.Site) -> _Planned | rewrite.NoRewrite:
    """The rewrite as planned before any eager call; a rule that needs the eager run first (a
    custom op's shapes) names its rule and title (the child plans it from what the call
    produced)."""
    rewrite = _rewrite()
    planned = rewrite.plan(source, site)
    if isinstance(planned, rewrite.NoRewrite):
        need = rewrite.needs_observation(source, site)
        r = rewrite.rule(need.rule) if need is not None else None
        if r is None:
            return planned
        return _Planned(r.code, r.name, r.safety, need.title)  # type: ignore[union-attr]
    return _Planned(planned.rule, planned.family, planned.safety, planned.title)


def _wraps_calls(code: str | None) -> bool:
    """Whether the rule of `code` may patch a user's line whose call breaks inside a library."""
    r = _rewrite().rule(code) if code else None
    return bool(r is not None and r.library_calls)


def _family_wraps_calls(family: str | None) -> bool:
    return any(r.name == family and r.library_calls for r in _rewrite().RULES)


def plan(results: dict, target: str, before: dict) -> tuple[list[PatchFix], list[dict]]:
    """Patch children for the breaks in the user's own files, and (as `fixes_not_tried` records)
    the breaks that get none, each with its reason."""
    rewrite = _rewrite()
    root = os.path.dirname(os.path.abspath(target.rpartition(":")[0]))
    real_root = os.path.realpath(root)
    specs: list[PatchFix] = []
    none: list[dict] = []
    # every break site before (file, function, reason, line): a patch must add none
    unique = ((results.get("graph_breaks") or {}).get("graph_breaks") or {}).get("unique") or []
    sites = [{k: f.get(k) for k in ("file", "function", "reason", "line")} for f in unique]
    for f in user_sites(results):
        library = f.get("library")
        path = os.path.abspath(f["file"])
        name = _name(path, int(f["line"]), root)
        common = dict(
            name=name,
            target=target,
            file=path,
            at_line=int(f["line"]),
            gb_type=f.get("reason") or "",
            gb_id=f.get("gb_id"),
            addresses=list(f.get("ids") or []),
            before={**before, "sites": sites},
        )
        outside = os.path.relpath(os.path.realpath(path), real_root).startswith(os.pardir)
        if os.path.relpath(path, root).startswith(os.pardir) or outside:
            if library:
                continue
            why = "no patch tried: the file is outside the target's folder, which is what is copied"
            if outside and not os.path.relpath(path, root).startswith(os.pardir):
                why = (
                    "no patch tried: the file is a link to a file outside the target's folder, "
                    "which a diff applied there cannot patch"
                )
            none.append({"spec": PatchFix(**common).to_dict(), "why": why})
            continue
        try:
            source = read_source(path)[1]
        except (OSError, UnicodeDecodeError) as exc:
            if not library:
                none.append({"spec": PatchFix(**common).to_dict(), "why": f"cannot read it: {exc}"})
            continue
        planned = _provisional(source, _site(f))
        if isinstance(planned, rewrite.NoRewrite):
            if library and not _family_wraps_calls(planned.family) and not planned.suppressed:
                continue  # a library call no rule wraps (`self.backbone(x)`): not the user's to edit
            spec = PatchFix(**common, family=planned.family or "")
            word = "suppressed" if planned.suppressed else "no mechanical patch"
            none.append({"spec": spec.to_dict(), "why": f"{word}: {planned.reason}"})
            continue
        if library and not _wraps_calls(planned.rule):
            continue
        specs.append(
            PatchFix(
                **common,
                family=planned.family,
                rule=planned.rule,
                safety=planned.safety,
                title=planned.title,
            )
        )
    return specs, none


# -- in the child -------------------------------------------------------------------------------


def _mirror(root: str, dest: str) -> None:
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


def _drop_user_modules(root: str) -> None:
    """Forget the user's modules imported from `root`, so the copy's are imported instead: only
    the user's own files (a virtual environment, site-packages or tcdoctor itself inside the
    target's folder stay imported, as the mirror leaves them out)."""
    from ..target.userframes import is_user_file

    prefix = os.path.realpath(root) + os.sep
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if path and os.path.realpath(path).startswith(prefix) and is_user_file(path):
            if not set(os.path.relpath(path, root).split(os.sep)) & SKIP_DIRS:
                del sys.modules[name]
    with contextlib.suppress(ValueError):
        sys.path.remove(root)


@contextlib.contextmanager
def _captured() -> Iterator[dict]:
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


def _buffers(model: Any) -> dict:
    """A module's buffers by name (empty for anything that is not a module)."""
    named = getattr(model, "named_buffers", None)
    return dict(named()) if callable(named) else {}


def _eager(w: Any, fresh: Callable[[], Any], ca: Any, device: Any) -> tuple[Any, dict]:
    """One eager call on a pristine copy, RNG reset: its snapshot (outputs and buffers after it;
    for a training step, the parameters and gradients after it too) and what it printed, warned
    and logged."""
    from ..probes import outputs
    from ..target.pristine import reset_rng_state
    from .pair import caller

    copy_ = fresh()
    if w.kind == "train":
        from .training import StepRunner

        fn: Any = StepRunner(copy_, "eager")
    else:
        fn = copy_.model
    reset_rng_state()
    with _captured() as said:
        out = caller(w, device)(fn, ca)
    leaves: Any = {"out": out, "buffers": _buffers(copy_.model)}
    if w.kind == "train":
        params = dict(copy_.model.named_parameters())
        leaves["params"] = params
        leaves["grads"] = {n: p.grad for n, p in params.items() if p.grad is not None}
    return outputs.snapshot(leaves), said


def _calls(w: Any) -> list[tuple[str, Any]]:
    """The workload's calls an eager comparison makes: its inputs, then each input variant (a
    state change such as `m.train()` is not a call of its own)."""
    from ..target.workload import is_state_change

    out = [("the workload's inputs", w.call_args)]
    for i, v in enumerate(getattr(w, "variants", None) or []):
        if not is_state_change(v):
            out.append((f"variant {i + 1}", w.variant_args(v)))
    return out


def _joined(said: list[dict]) -> dict:
    """What several calls printed, warned and logged, in call order."""
    return {
        "stdout": "".join(s["stdout"] for s in said),
        "warnings": [x for s in said for x in s["warnings"]],
        "logs": [x for s in said for x in s["logs"]],
    }


def _same(a: Any, b: Any, autocast: Any, why: str = "patched vs original, both eager") -> dict:
    from ..probes import numerics

    return numerics.compare(a, b, None, why, autocast)


def _describe(value: Any) -> dict:
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
    return {"type": type(value).__name__}


def _observe(
    w: Any, fresh: Callable, device: Any, path: str, need: rewrite.Need, ca: Any
) -> tuple[dict, tuple] | None:
    """What line `need.line` of `path` read and produced in one eager call of the original on
    `ca`: its inputs when the line starts, its result at the first later event where the target
    name holds a new value (None: the line did not run). A trace function sees the frames of that
    file only."""
    from .pair import caller

    real, line, fn_name = os.path.realpath(path), need.line, need.function
    names, target = list(need.inputs), need.output
    seen: dict = {}

    def local(frame: Any, event: str, _arg: Any) -> Any:
        if "output" in seen:
            return None
        if event == "line" and frame.f_lineno == line and "inputs" not in seen:
            loc = frame.f_locals
            seen["inputs"] = {n: loc.get(n) for n in names}
            seen["before"] = loc.get(target)
        elif "inputs" in seen and event in ("line", "return"):
            value = frame.f_locals.get(target)
            if value is not None and value is not seen["before"]:
                seen["output"] = value
        return local

    def tracer(frame: Any, event: str, _arg: Any) -> Any:
        code = frame.f_code
        if event == "call" and os.path.realpath(code.co_filename) == real:
            if fn_name is None or code.co_name == fn_name:
                return local
        return None

    copy_ = fresh()
    sys.settrace(tracer)
    try:
        caller(w, device)(copy_.model, ca)
    finally:
        sys.settrace(None)
    if "inputs" not in seen or "output" not in seen:
        return None
    inputs = seen["inputs"]
    observed = {
        "inputs": {n: _describe(v) for n, v in inputs.items()},
        "output": _describe(seen["output"]),
    }
    args = tuple(v.detach().clone() if hasattr(v, "detach") else v for v in inputs.values())
    return observed, args


def _lines_run(path: str, run: Callable[[], Any]) -> set[int]:
    """Line numbers of `path` that ran during `run()`."""
    real, hit = os.path.realpath(path), set()

    def local(frame: Any, event: str, _arg: Any) -> Any:
        if event == "line":
            hit.add(frame.f_lineno)
        return local

    def tracer(frame: Any, event: str, _arg: Any) -> Any:
        if event == "call" and os.path.realpath(frame.f_code.co_filename) == real:
            return local
        return None

    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(None)
    return hit


def _decisions(path: str, payload: rewrite.BranchPayload, run: Callable[[], Any]) -> list[dict]:
    """Each time the `if` ran during `run()`: its test and torch.cond's predicate, evaluated in
    the original's frame when the `if` line starts ({"test": bool, "pred": bool | None}). An if
    that did not run decides nothing: its branch is not counted. One-line branches are counted
    the same way (no line of a body has to run)."""
    import torch

    real, found = os.path.realpath(path), []
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

    def tracer(frame: Any, event: str, _arg: Any) -> Any:
        code = frame.f_code
        if (
            event == "call"
            and code.co_name == payload.function
            and os.path.realpath(code.co_filename) == real
        ):
            return local
        return None

    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(None)
    return found


def _variants(ca: Any) -> list[tuple[str, Any]]:
    """Inputs made from the workload's (negated, scaled, shifted, zeros, ones, reseeded noise)
    for a branch rewrite: (how it was made, the call's arguments)."""
    import torch

    from ..target.workload import CallArgs

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


def _grads(w: Any, model: Any, ca: Any, device: Any) -> dict | str:
    """The parameters' gradients of the sum of the output's floating-point tensors, one call with
    grad enabled (RNG reset), or why there are none."""
    import torch

    from ..probes import outputs
    from ..target.pristine import reset_rng_state

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


@dataclass
class ProofContext:
    """What every proof function reads: the workload and its patched copy's, pristine copies of
    each, the device, the plan, the calls made and where the copy lives."""

    w: Any
    pw: Any
    fresh_o: Callable[[], Any]
    fresh_p: Callable[[], Any]
    device: Any
    planned: Any  # rewrite.Rewrite
    made: list[tuple[str, Any]]
    said_orig: dict
    said_patch: dict
    path: str  # the user's file (traced for the original's lines)
    copy_path: str  # the patched file in the copy
    observations: list[tuple[str, dict, tuple] | tuple[str, None, None]] = field(
        default_factory=list
    )


def _said(what: str) -> Callable[[ProofContext], dict]:
    def check(ctx: ProofContext) -> dict:
        orig, patch = ctx.said_orig[what], ctx.said_patch[what]
        equal = orig == patch
        n = len(orig) if what != "stdout" else len(orig.splitlines())
        detail = f"{n} line(s) in the original's eager calls, " + (
            "the same in the patched copy's" if equal else "different in the patched copy's"
        )
        if n == 0 and equal:
            detail += " (nothing written on these inputs: equal, but nothing to compare)"
        return {f"eager {what}": {"passed": equal, "detail": detail}}

    return check


def _branch_proof(ctx: ProofContext) -> dict:
    """Both branches of the original taken (each counted when its `if` ran), the predicate equal
    to the test wherever it ran, and outputs, buffers and gradients equal, on the workload's
    inputs, every variant and generated inputs until both branches were seen."""
    from ..probes import outputs
    from ..target.pristine import reset_rng_state
    from .pair import caller

    payload = ctx.planned.payload
    w, call = ctx.w, caller(ctx.w, ctx.device)
    taken: dict[str, list[str]] = {"true": [], "false": []}
    differs: list[str] = []
    disagree: list[str] = []
    grads_differ: list[str] = []
    grad_notes: set[str] = set()
    tries = list(ctx.made) + _variants(w.call_args)
    for i, (how, ca) in enumerate(tries):
        model_o, model_p = ctx.fresh_o().model, ctx.fresh_p().model
        box: dict = {}

        def run_original(m: Any = model_o, a: Any = ca, into: dict = box) -> None:
            reset_rng_state()
            into["o"] = outputs.snapshot({"out": call(m, a), "buffers": _buffers(m)})

        seen = _decisions(ctx.path, payload, run_original)
        if not seen:
            continue  # the `if` did not run on this input: it decides nothing
        for d in seen:
            taken["true" if d["test"] else "false"].append(how)
            if d["pred"] is None or d["pred"] != d["test"]:
                disagree.append(how)
        reset_rng_state()
        got = outputs.snapshot({"out": call(model_p, ca), "buffers": _buffers(model_p)})
        if _same(box["o"], got, w.autocast)["passed"] is not True:
            differs.append(how)
        if w.kind != "train":
            g_o = _grads(w, ctx.fresh_o().model, ca, ctx.device)
            g_p = _grads(w, ctx.fresh_p().model, ca, ctx.device)
            if isinstance(g_o, str) or isinstance(g_p, str):
                if g_o != g_p:
                    grads_differ.append(how)
                grad_notes.add(g_o if isinstance(g_o, str) else str(g_p))
            elif _same(outputs.snapshot(g_o), outputs.snapshot(g_p), w.autocast)["passed"] is False:
                grads_differ.append(how)
        both = taken["true"] and taken["false"]
        if i >= len(ctx.made) - 1 and both and len(taken["true"]) + len(taken["false"]) >= 4:
            break
    taken = {k: list(dict.fromkeys(v)) for k, v in taken.items()}
    both = bool(taken["true"] and taken["false"])
    detail = (
        f"true branch taken on {', '.join(taken['true']) or 'no input tried'}; false on "
        f"{', '.join(taken['false']) or 'no input tried'} (counted where the if ran)"
    )
    detail += (
        f"; outputs or buffers differ on {', '.join(differs)}"
        if differs
        else "; outputs and buffers equal on each"
    )
    checks = {"both branches": {"passed": both and not differs, "detail": detail}}
    checks["predicate"] = {
        "passed": not disagree and both,
        "detail": f"torch.cond's `{payload.predicate}` against the test `{payload.test}`, "
        "evaluated where the if ran: "
        + (f"disagree on {', '.join(dict.fromkeys(disagree))}" if disagree else "equal on each"),
    }
    if w.kind != "train":
        checks["gradients"] = {
            "passed": not grads_differ,
            "detail": "parameters' gradients of the outputs' sum, patched vs original, on each "
            "input the if ran on: "
            + (
                f"differ on {', '.join(grads_differ)}"
                if grads_differ
                else "equal" + (f" ({'; '.join(sorted(grad_notes))})" if grad_notes else "")
            ),
        }
    return checks


def _module_at(path: str) -> Any:
    real = os.path.realpath(path)
    return next(
        (
            m
            for m in list(sys.modules.values())
            if getattr(m, "__file__", None) and os.path.realpath(m.__file__) == real
        ),
        None,
    )


def _opcheck_one(op: Any, args: tuple) -> str | None:
    """torch.library.opcheck on one input: None when it passes, else what failed."""
    import torch

    try:
        torch.library.opcheck(op, args)
    except Exception as exc:  # noqa: BLE001 - a failing check is the finding
        return f"{type(exc).__name__}: {first_line(str(exc))}"[:300]
    return None


def _op_proof(ctx: ProofContext) -> dict:
    """opcheck on the inputs the line saw on the workload's call and every variant, then the
    patched copy compiled (aot_eager: the fake traced) against its eager outputs on every
    variant: a fake right on the workload's inputs only fails here."""
    import torch

    from ..probes import outputs
    from ..target.pristine import reset_rng_state
    from .pair import caller

    payload = ctx.planned.payload
    mod = _module_at(ctx.copy_path)
    op = getattr(mod, payload.function, None) if mod is not None else None
    checks: dict = {}
    if op is None:
        checks["torch.library.opcheck"] = {
            "passed": False,
            "detail": f"the generated op {payload.function} was not found in the patched module",
        }
        return checks
    ran = [(how, args) for how, obs, args in ctx.observations if obs is not None]
    failed = [(how, why) for how, args in ran if (why := _opcheck_one(op, args))]  # type: ignore[arg-type]
    skipped = [how for how, obs, _ in ctx.observations if obs is None]
    detail = (
        f"passed on the inputs the line saw on {', '.join(h for h, _ in ran)}"
        if not failed
        else "; ".join(f"{how}: {why}" for how, why in failed)
    )
    if skipped:
        detail += f" (the line did not run on {', '.join(skipped)})"
    checks["torch.library.opcheck"] = {"passed": bool(ran) and not failed, "detail": detail}
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
        if _same(eager, got, ctx.w.autocast, why)["passed"] is False:
            bad.append(f"{how} (outputs differ)")
    checks["compiled on every variant"] = {
        "passed": not bad,
        "detail": f"the patched copy compiled (backend={COMPILE_CHECK_BACKEND}, the op's fake "
        "traced) against its eager outputs on "
        + ", ".join(how for how, _ in ctx.made)
        + (f": fails on {'; '.join(bad)}" if bad else ": equal on each"),
    }
    return checks


def proofs() -> dict:
    """Each `Proof` of the rewrite package -> the function that checks it (one per member)."""
    rewrite = _rewrite()
    return {
        rewrite.Proof.STDOUT: _said("stdout"),
        rewrite.Proof.WARNINGS: _said("warnings"),
        rewrite.Proof.LOGS: _said("logs"),
        rewrite.Proof.BRANCHES: _branch_proof,
        rewrite.Proof.OPCHECK: _op_proof,
    }


def _rel(path: str, base: str) -> str:
    """`path` relative to `base` when it lies under it (a copy's file and the original's then
    read alike), else as it is (a library's file)."""
    if (
        path
        and os.path.isabs(path)
        and os.path.realpath(path).startswith(os.path.realpath(base) + os.sep)
    ):
        return os.path.relpath(os.path.realpath(path), os.path.realpath(base))
    return path or ""


def _key(site: dict, base: str) -> tuple[str, str]:
    """A break site as (file, reason): a patch moves lines, so lines are not matched."""
    return _rel(site.get("file") or "", base), first_line(site.get("reason"))


def new_sites(
    before: list[dict], root: str, after: list[dict], copy_root: str, fixed: tuple[str, str]
) -> list[dict]:
    """Break sites after the patch that were not there before, counted as a multiset (the same
    site may break more than once); the patched site `fixed` (file, reason) is taken off first."""
    pool = [_key(f, root) for f in before]
    if fixed in pool:
        pool.remove(fixed)
    new = []
    for r in after:
        k = _key(r, copy_root)
        if k in pool:
            pool.remove(k)
        else:
            new.append({**r, "file": k[0]})
    return new


def run(spec: PatchFix, workload: Any, options: Any) -> dict:
    """The patch planned, applied to a copy of the target's folder and proven: its fix row."""
    t0 = time.perf_counter()
    row: dict = {
        "fix": spec.line,
        "kind": spec.fix_kind,
        "name": spec.name,
        "addresses": spec.addresses,
        "before": spec.before,
    }
    tmp = tempfile.mkdtemp(prefix="tcdoctor-patch-")
    try:
        _prove(spec, workload, options, row, tmp)
    except Exception as exc:  # noqa: BLE001 - a patch that cannot be proven is a finding
        row.update(outcome="fails", why=f"{type(exc).__name__}: {first_line(str(exc))}"[:500])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    row["seconds"] = time.perf_counter() - t0
    return row


def diff_path(file: str, root: str) -> str:
    """The path a diff names for `file`, relative to the target's folder: a symlink's real file
    (what `git apply` and `patch` can patch)."""
    real, real_root = os.path.realpath(file), os.path.realpath(root)
    if real.startswith(real_root + os.sep):
        return os.path.relpath(real, real_root)
    return os.path.relpath(file, root)


def _prove(spec: PatchFix, w: Any, options: Any, row: dict, tmp: str) -> None:
    from ..probes import calls
    from ..target.load import load_with_rebuild
    from .pair import fresh_copies

    rewrite = _rewrite()

    path, func = spec.target.rpartition(":")[0], spec.target.rpartition(":")[2]
    root = os.path.dirname(os.path.abspath(path))
    raw, source = read_source(spec.file)
    site = rewrite.Site(line=spec.at_line, gb_type=spec.gb_type, gb_id=spec.gb_id, file=spec.file)
    device = calls.detect(w.model, w.call_args)
    fresh_o = fresh_copies(w, device)
    made = _calls(w)
    observed, observations = None, []
    need = rewrite.needs_observation(source, site)
    if need:
        for how, ca in made:
            seen = _observe(w, fresh_o, device, spec.file, need, ca)
            observations.append((how, *seen) if seen else (how, None, None))
        if observations[0][1] is None:
            raise RuntimeError(
                f"line {need.line} did not run in an eager call: its shapes are unknown"
            )
        observed = observations[0][1]
    planned = rewrite.plan(source, site, observed)
    if isinstance(planned, rewrite.NoRewrite):
        row.update(outcome="no mechanical patch", why=planned.reason)
        return
    rel = diff_path(spec.file, root)
    patch: dict = {
        "rule": planned.rule,
        "family": planned.family,
        "safety": planned.safety,
        "title": planned.title,
        "note": planned.note,
        "file": rel,
        "line": planned.line,
        "sha256": digest(raw),
        "diff": rewrite.unified_diff(source, planned.source, rel),
        "observed": observed,
        "checks": {},
        "verified": False,
    }
    row["patch"] = patch
    checks = patch["checks"]
    originals = [_eager(w, fresh_o, ca, device) for _, ca in made]
    _mirror(root, tmp)
    copy_path = os.path.join(tmp, os.path.relpath(spec.file, root))
    with open(copy_path, "wb") as fh:
        fh.write(planned.source.encode("utf-8"))
    _drop_user_modules(root)
    pw, _ = load_with_rebuild(os.path.join(tmp, os.path.relpath(path, root)) + ":" + func)
    fresh_p = fresh_copies(pw, device)
    patched = [_eager(pw, fresh_p, ca, device) for _, ca in made]  # the same tensors
    sames = [_same(o[0], p[0], w.autocast) for o, p in zip(originals, patched)]
    differ = [how for (how, _), same in zip(made, sames) if same["passed"] is not True]
    errs = [x["max_abs_err"] for x in sames if x.get("max_abs_err") is not None]
    checks["eager outputs"] = {
        "passed": not differ,
        "detail": f"patched vs original, eager, on {', '.join(how for how, _ in made)}: "
        + (f"differ on {', '.join(differ)}" if differ else "equal by the numerics rule")
        + f", {sum(x.get('tensors_compared', 0) for x in sames)} tensor(s) compared (outputs "
        f"and buffers), max abs error {max(errs) if errs else None}"
        + ("; parameters and gradients after the step too" if w.kind == "train" else ""),
    }
    ctx = ProofContext(
        w,
        pw,
        fresh_o,
        fresh_p,
        device,
        planned,
        made,
        _joined([o[1] for o in originals]),
        _joined([p[1] for p in patched]),
        spec.file,
        copy_path,
        observations,
    )
    table = proofs()
    for proof in planned.proofs:
        check = table.get(proof)
        if check is None:
            checks[f"proof {proof}"] = {"passed": False, "detail": "no proof of this kind"}
            continue
        checks.update(check(ctx))
    _measure(spec, w, pw, fresh_o, fresh_p, device, options, row, tmp, root)


def _measure(
    spec: PatchFix,
    w: Any,
    pw: Any,
    fresh_o: Callable,
    fresh_p: Callable,
    device: Any,
    options: Any,
    row: dict,
    tmp: str,
    root: str,
) -> None:
    """Breaks on the patched copy (cheap backend, sites), then the real backend's row: the
    patched copy compiled, timed against the original eager."""
    from ..probes.first_call import build
    from . import fixes
    from .pair import timed_pair

    checks, before = row["patch"]["checks"], spec.before
    cheap = fixes._cheap_breaks(pw)
    row["cheap"] = cheap
    b_count = before.get("graph_breaks")
    fixed = _key({"file": spec.file, "reason": spec.gb_type}, root)
    new = new_sites(before.get("sites") or [], root, cheap.get("remaining") or [], tmp, fixed)
    fewer = b_count is not None and cheap["graph_breaks"] < b_count
    checks["fewer breaks"] = {
        "passed": fewer,
        "detail": f"graph breaks {b_count} → {cheap['graph_breaks']} (backend='eager', "
        "counted from PyTorch's graph-break log as the main analysis counts them)",
    }
    checks["no new break"] = {
        "passed": not new,
        "detail": "none at a site that had none"
        if not new
        else "new: "
        + "; ".join(f"{r['file']}:{r.get('line')} {first_line(r.get('reason'))}" for r in new[:3]),
    }
    backend, mode = options.backend, options.mode
    if w.kind == "train":
        from .training import StepRunner

        def make() -> tuple[Any, Any]:
            runner = StepRunner(fresh_p(), "eager")
            compiled = build(runner.step, backend, mode, runner.spec.compile_kwargs)
            return StepRunner(fresh_o(), "eager"), compiled

        label = "train step"
    else:

        def make() -> tuple[Any, Any]:
            return fresh_o().model, build(fresh_p().model, backend, mode, pw.compile_kwargs)

        label = "forward"
    real = timed_pair(
        make,
        w,
        label,
        options.budget_s,
        device,
        options,
        backend,
        against=before.get("speedup"),
        mode=mode,
    )
    after = fixes.after_figures(real)
    row["after"] = after
    checks["compiled numerics"] = {
        "passed": after.get("numerics_passed") is True,
        "detail": "the patched copy compiled vs the original eager, by the numerics rule: "
        + {True: "pass", False: "fail", None: "not compared"}[after.get("numerics_passed")]
        + (
            f" (max abs error {after.get('max_abs_err')})"
            if after.get("max_abs_err") is not None
            else ""
        ),
    }
    failed, outcome, why = fixes.judge_patch(checks, fixes.outcome(before, after, row["cheap"]))
    row["patch"].update(verified=not failed, failed=failed)
    row.update(outcome=outcome, why=why)
