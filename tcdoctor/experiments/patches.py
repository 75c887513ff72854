"""Source patches for graph breaks in the user's own code: planned, applied to a copy, proven.

Plan (in the cold child, torch-free). Each graph break whose site is the user's own file (never a
file under site-packages or PyTorch; a line in the user's file that calls into a library is the
user's) and lies in the target's folder gets the rewrite `rewrite.plan` writes for it, or the reason
there is none (listed as not tried, so a `.tolist()` loop says "no mechanical patch" and why).
Config switches that remove a break are planned before patches (fixes.plan): a switch applies to
the whole process, a patch to one line.

Proof (`run`, in a fresh child of its own, `PatchFix`). The user's file is only read:

1. The rewrite is planned again from the file as it is now (its sha256 is kept, so `tcdoctor fix`
   can refuse a file that changed since); a custom op's fake implementation comes from what the
   line produced in an eager call of the original (`_observe`: a trace function records the line's
   inputs and its result).
2. The target's folder is mirrored into a temporary folder (Python files copied, other files
   linked, caches and virtual environments left out) and the patched file written there.
3. The original is called eagerly on a pristine copy (RNG reset), with stdout, warnings and log
   records captured; the user's modules are dropped from `sys.modules`; the target is loaded again
   from the copy and called the same way. Outputs (and, for a training step, the parameters and
   gradients after the step) are compared by the numerics rule; captured stdout, warnings and log
   records must be equal where the patch guards them. A branch rewrite is also compared on
   generated inputs (the workload's, negated, scaled, shifted) until both branches of the original
   were seen taken (a trace of the original's lines tells which); one branch never taken fails.
   A custom op is checked with `torch.library.opcheck` on the inputs the eager call saw.
4. Breaks are counted on the patched copy as the main analysis counts them (the cheap `eager`
   backend, PyTorch's graph-break log): fewer than before, and none at a site that had none
   (sites keyed by file, function and reason: a patch moves lines). Then the real backend measures
   the patched copy (`pair.main_pair`: first call, paired timing against its own eager, compiled
   numerics by the numerics rule); its speedup over the unpatched compiled model is the ratio of
   the two speedups, each against the same eager code.

A patch is verified only when every check holds; one that fails is listed with what failed.

Pitfalls. Two patches of one file are proven one at a time, each against the original file: the
diff file holds one verified patch per file (the best), and the report says to analyse again for
the next. A branch rewrite is verified on the inputs tried only; a patch in a file imported from
outside the target's folder is not tried (the copy would not hold it).
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


# -- plan (torch-free) --------------------------------------------------------------------------


def _rewrite() -> Any:
    """experiments/rewrite.py, imported only where a break in the user's code is patched: libcst
    takes ~0.13 s to import, which an analysis with no such break never pays."""
    from . import rewrite

    return rewrite


def user_sites(results: dict) -> list[dict]:
    """The graph breaks whose site is the user's own file, one per (file, line)."""
    gb = (results.get("graph_breaks") or {}).get("graph_breaks") or {}
    seen, out = set(), []
    for f in gb.get("unique") or []:
        key = (f.get("file"), f.get("line"))
        if f.get("origin") != "user" or not key[0] or not key[1] or key in seen:
            continue
        if not os.path.isfile(key[0]):
            continue
        seen.add(key)
        out.append(f)
    return out


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


def _provisional(source: str, site: rewrite.Site) -> rewrite.Rewrite | rewrite.NoRewrite:
    """The rewrite as planned before any eager call: a custom op's shapes are not known yet, so its
    title comes from placeholder shapes (the child plans it again from what the call produced)."""
    rewrite = _rewrite()
    planned = rewrite.plan(source, site)
    need = rewrite.needs_observation(source, site)
    if isinstance(planned, rewrite.NoRewrite) and need:
        t = {"type": "tensor", "shape": [1], "dtype": "float32"}
        observed = {"inputs": {n: dict(t) for n in need.get("inputs") or []}, "output": dict(t)}
        return rewrite.plan(source, site, observed)
    return planned


def plan(results: dict, target: str, before: dict) -> tuple[list[PatchFix], list[dict]]:
    """Patch children for the breaks in the user's own files, and (as `fixes_not_tried` records)
    the breaks that get none, each with its reason."""
    rewrite = _rewrite()
    root = os.path.dirname(os.path.abspath(target.rpartition(":")[0]))
    specs: list[PatchFix] = []
    none: list[dict] = []
    # every break site before (file, function, reason, line): a patch must add none
    unique = ((results.get("graph_breaks") or {}).get("graph_breaks") or {}).get("unique") or []
    sites = [{k: f.get(k) for k in ("file", "function", "reason", "line")} for f in unique]
    for f in user_sites(results):
        path = os.path.abspath(f["file"])
        name = _name(path, int(f["line"]), root)
        common = dict(
            name=name,
            target=target,
            file=path,
            at_line=int(f["line"]),
            gb_type=f.get("reason") or "",
            gb_id=f.get("gb_id"),
            addresses=[f["id"]] if f.get("id") else [],
            before={**before, "sites": sites},
        )
        if os.path.relpath(path, root).startswith(os.pardir):
            why = "no patch tried: the file is outside the target's folder, which is what is copied"
            none.append({"spec": PatchFix(**common).to_dict(), "why": why})
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                source = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            none.append({"spec": PatchFix(**common).to_dict(), "why": f"cannot read it: {exc}"})
            continue
        planned = _provisional(source, _site(f))
        if isinstance(planned, rewrite.NoRewrite):
            spec = PatchFix(**common, family=planned.family or "")
            none.append({"spec": spec.to_dict(), "why": f"no mechanical patch: {planned.reason}"})
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
    """stdout, warnings and log records of the block, as text a second run must repeat."""
    got: dict = {"stdout": "", "warnings": [], "logs": []}
    records: list[logging.LogRecord] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = _Keep(level=0)
    root = logging.getLogger()
    root.addHandler(handler)
    out = io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
            warnings.simplefilter("always")
            yield got
    finally:
        root.removeHandler(handler)
        got["stdout"] = out.getvalue()
        got["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
        got["logs"] = [f"{r.name} {r.levelname}: {r.getMessage()}" for r in records]


def _eager(w: Any, fresh: Callable[[], Any], ca: Any, device: Any) -> tuple[Any, dict]:
    """One eager call on a pristine copy, RNG reset: its snapshot (outputs; for a training step,
    the parameters and gradients after it too) and what it printed, warned and logged."""
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
    leaves: Any = {"out": out}
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


def _same(a: Any, b: Any, autocast: Any) -> dict:
    from ..probes import numerics

    return numerics.compare(a, b, None, "patched vs original, both eager", autocast)


def _describe(value: Any) -> dict:
    import torch

    if isinstance(value, torch.Tensor):
        return {
            "type": "tensor",
            "shape": list(value.shape),
            "dtype": str(value.dtype).replace("torch.", ""),
        }
    for t in (bool, int, float):
        if isinstance(value, t):
            return {"type": t.__name__}
    return {"type": type(value).__name__}


def _observe(w: Any, fresh: Callable, device: Any, path: str, need: dict) -> tuple[dict, tuple]:
    """What line `need["line"]` of `path` read and produced in one eager call of the original: its
    inputs when the line starts, its result at the first later event where the target name holds
    a new value. A trace function sees the frames of that file only."""
    from .pair import caller

    real, line, fn_name = os.path.realpath(path), need["line"], need.get("function")
    names, target = list(need.get("inputs") or []), need.get("output")
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
        caller(w, device)(copy_.model, w.call_args)
    finally:
        sys.settrace(None)
    if "inputs" not in seen or "output" not in seen:
        raise RuntimeError(f"line {line} did not run in an eager call: its shapes are unknown")
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


def _variants(ca: Any) -> list[tuple[str, Any]]:
    """The workload's inputs and inputs made from them (negated, scaled, shifted, zeros, ones,
    reseeded noise) for a branch rewrite: (how it was made, the call's arguments)."""
    import torch

    from ..target.workload import CallArgs

    def mapped(f: Callable[[torch.Tensor], torch.Tensor]) -> CallArgs:
        def one(v: Any) -> Any:
            return f(v) if isinstance(v, torch.Tensor) and v.is_floating_point() else v

        return CallArgs(tuple(one(v) for v in ca.args), {k: one(v) for k, v in ca.kwargs.items()})

    gen = torch.Generator().manual_seed(1)
    ways: list[tuple[str, Callable[[torch.Tensor], torch.Tensor]]] = [
        ("x", lambda t: t),
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


def _branches(
    w: Any,
    original: Callable,
    patched: Callable,
    device: Any,
    path: str,
    branch: dict,
) -> dict:
    """Both eager copies called on generated inputs: which branch of the original each took, and
    whether the patched copy's outputs equal the original's on every one of them."""
    from ..probes import outputs
    from ..target.pristine import reset_rng_state
    from .pair import caller

    call = caller(w, device)
    t_lo, t_hi = branch["true_lines"]
    f_lines = branch.get("false_lines")
    taken: dict[str, list[str]] = {"true": [], "false": []}
    differs: list[str] = []
    for how, ca in _variants(w.call_args):
        model_o, model_p = original(), patched()
        box: dict = {}

        def run_original(m: Any = model_o, a: Any = ca, into: dict = box) -> None:
            reset_rng_state()
            into["o"] = outputs.snapshot(call(m, a))

        hit = _lines_run(path, run_original)
        if any(t_lo <= n <= t_hi for n in hit):
            side = "true"
        elif f_lines is None or any(f_lines[0] <= n <= f_lines[1] for n in hit):
            side = "false"
        else:
            continue  # the `if` did not run on this input
        reset_rng_state()
        got = outputs.snapshot(call(model_p, ca))
        if _same(box["o"], got, w.autocast)["passed"] is not True:
            differs.append(how)
        taken[side].append(how)
        if taken["true"] and taken["false"] and len(taken["true"]) + len(taken["false"]) >= 4:
            break
    return {"taken": taken, "differs": differs}


def _opcheck(module_path: str, function: str, args: tuple) -> str | None:
    """torch.library.opcheck on the generated op with the inputs the eager call saw: None when it
    passes, else what failed."""
    import torch

    real = os.path.realpath(module_path)
    mod = next(
        (
            m
            for m in list(sys.modules.values())
            if getattr(m, "__file__", None) and os.path.realpath(m.__file__) == real
        ),
        None,
    )
    op = getattr(mod, function, None) if mod is not None else None
    if op is None:
        return f"the generated op {function} was not found in the patched module"
    try:
        torch.library.opcheck(op, args)
    except Exception as exc:  # noqa: BLE001 - a failing check is the finding
        return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"[:300]
    return None


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
    return _rel(site.get("file") or "", base), (site.get("reason") or "").splitlines()[0]


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


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
        row.update(
            outcome="fails",
            why=f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"[:500],
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    row["seconds"] = time.perf_counter() - t0
    return row


def _prove(spec: PatchFix, w: Any, options: Any, row: dict, tmp: str) -> None:
    from ..probes import calls
    from ..target.load import load_with_rebuild
    from .pair import fresh_copies

    rewrite = _rewrite()

    path, func = spec.target.rpartition(":")[0], spec.target.rpartition(":")[2]
    root = os.path.dirname(os.path.abspath(path))
    with open(spec.file, encoding="utf-8") as fh:
        source = fh.read()
    site = rewrite.Site(line=spec.at_line, gb_type=spec.gb_type, gb_id=spec.gb_id, file=spec.file)
    device = calls.detect(w.model, w.call_args)
    fresh_o = fresh_copies(w, device)
    observed, op_args = None, ()
    need = rewrite.needs_observation(source, site)
    if need:
        observed, op_args = _observe(w, fresh_o, device, spec.file, need)
    planned = rewrite.plan(source, site, observed)
    if isinstance(planned, rewrite.NoRewrite):
        row.update(outcome="no mechanical patch", why=planned.reason)
        return
    rel = os.path.relpath(spec.file, root)
    patch: dict = {
        "rule": planned.rule,
        "family": planned.family,
        "safety": planned.safety,
        "title": planned.title,
        "note": planned.note,
        "file": rel,
        "line": planned.line,
        "sha256": _sha(source),
        "diff": rewrite.unified_diff(source, planned.source, rel),
        "observed": observed,
        "checks": {},
        "verified": False,
    }
    row["patch"] = patch
    checks = patch["checks"]
    made = _calls(w)
    originals = [_eager(w, fresh_o, ca, device) for _, ca in made]
    _mirror(root, tmp)
    with open(os.path.join(tmp, rel), "w", encoding="utf-8") as fh:
        fh.write(planned.source)
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
        + f", {sum(x.get('tensors_compared', 0) for x in sames)} tensor(s) compared, max abs "
        f"error {max(errs) if errs else None}"
        + ("; parameters and gradients after the step too" if w.kind == "train" else ""),
    }
    said_orig = _joined([o[1] for o in originals])
    said_patch = _joined([p[1] for p in patched])
    for what in ("stdout", "warnings", "logs"):
        if what in planned.checks:
            equal = said_orig[what] == said_patch[what]
            n = len(said_orig[what]) if what != "stdout" else len(said_orig[what].splitlines())
            checks[f"eager {what}"] = {
                "passed": equal,
                "detail": f"{n} line(s) in the original's eager calls, "
                + (
                    "the same in the patched copy's" if equal else "different in the patched copy's"
                ),
            }
    if "branches" in planned.checks and planned.branch:
        br = _branches(
            w,
            lambda: fresh_o().model,
            lambda: fresh_p().model,
            device,
            spec.file,
            planned.branch,
        )
        both = bool(br["taken"]["true"] and br["taken"]["false"])
        checks["both branches"] = {
            "passed": both and not br["differs"],
            "detail": f"true branch taken on {', '.join(br['taken']['true']) or 'no input tried'}; "
            f"false on {', '.join(br['taken']['false']) or 'no input tried'}"
            + (
                f"; outputs differ on {', '.join(br['differs'])}"
                if br["differs"]
                else "; outputs equal on each"
            ),
        }
    if "opcheck" in planned.checks and planned.op:
        failed = _opcheck(os.path.join(tmp, rel), planned.op["function"], op_args)
        checks["torch.library.opcheck"] = {
            "passed": failed is None,
            "detail": "passed on the inputs the eager call saw" if failed is None else failed,
        }
    _measure(spec, pw, options, row, tmp, root)


def _measure(spec: PatchFix, pw: Any, options: Any, row: dict, tmp: str, root: str) -> None:
    """Breaks on the patched copy (cheap backend, sites), then the real backend's row."""
    from . import fixes
    from .pair import main_pair

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
        + "; ".join(f"{r['file']}:{r.get('line')} {r['reason'].splitlines()[0]}" for r in new[:3]),
    }
    real = main_pair(pw, options, options.backend, options.mode, against=before.get("speedup"))
    after = fixes.after_figures(real)
    row["after"] = after
    checks["compiled numerics"] = {
        "passed": after.get("numerics_passed") is True,
        "detail": "compiled vs eager on the patched copy by the numerics rule: "
        + {True: "pass", False: "fail", None: "not compared"}[after.get("numerics_passed")]
        + (
            f" (max abs error {after.get('max_abs_err')})"
            if after.get("max_abs_err") is not None
            else ""
        ),
    }
    failed, outcome, why = fixes.judge_patch(checks, fixes._outcome(before, after, row["cheap"]))
    row["patch"].update(verified=not failed, failed=failed)
    row.update(outcome=outcome, why=why)
