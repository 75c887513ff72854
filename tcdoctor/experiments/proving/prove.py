"""A patch proven in its own fresh child (`PatchFix`): planned again, applied to a copy of the
target's folder, checked, then measured. The user's file is only read, as bytes.

Method.
1. The rewrite is planned again from the file as it is now (its bytes' sha256 is kept, so
   `tcdoctor fix` can refuse a file that changed since). A rule that needs the eager run first
   (`needs_observation`: a custom op's shapes) gets what the line (or function) read and produced
   in an eager call of the original on the workload's inputs and on every input variant.
2. The original is called eagerly on pristine copies (RNG reset) on each of those inputs, with
   stdout, warnings and log records captured; the target's folder is mirrored, the patched file
   written there, the user's modules dropped and the target loaded again from the copy and
   called the same way. Outputs and buffers (and, for a training step, the parameters and
   gradients after the step) are compared by the numerics rule: "eager outputs".
3. Each proof the rewrite names is looked up in `proofs.registry.PROOFS` and run.
4. measure.py counts the copy's breaks and times it compiled against the original eager.

A patch is verified only when every check holds; one that fails is listed with what failed, and
a patch that cannot be proven at all (an exception) is a row whose outcome is "fails".
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any, Callable

from ...outcomes import FixOutcome
from ...report.encoding import as_sent
from ...report.sections.fixes import Check
from ..specs import PatchFix
from . import sandbox
from .measure import measure
from .plan import diff_path, digest, first_line, read_source, rewrite_package


def run(spec: PatchFix, workload: Any, options: Any) -> dict:
    """The patch planned, applied to a copy of the target's folder and proven: its fix row, as the
    child sends it (JSON: the patch's typed checks written as their dicts)."""
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
            outcome=FixOutcome.FAILS, why=f"{type(exc).__name__}: {first_line(str(exc))}"[:500]
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    row["seconds"] = time.perf_counter() - t0
    return as_sent(row)  # its checks typed up to here (proofs/context.py), as the parent reads it


def _replan(
    spec: PatchFix, source: str, w: Any, fresh_o: Callable, device: Any, made: list
) -> tuple[Any, list]:
    """The rewrite planned from the file as it is now, after the eager observations its rule
    needs (each `(how, observed, args)`, or `(how, None, None)` where the line did not run)."""
    rewrite = rewrite_package()
    site = rewrite.Site(line=spec.at_line, gb_type=spec.gb_type, gb_id=spec.gb_id, file=spec.file)
    observations: list = []
    need = rewrite.needs_observation(source, site)
    if need is None:
        return rewrite.plan(source, site, None), observations
    for how, ca in made:
        seen = sandbox.observe(w, fresh_o, device, spec.file, need, ca)
        observations.append((how, *seen) if seen else (how, None, None))
    if observations[0][1] is None:
        where = f"{need.function}()" if need.whole else f"line {need.line}"
        raise RuntimeError(f"{where} did not run in an eager call: its shapes are unknown")
    return rewrite.plan(source, site, observations[0][1]), observations


def _record(
    spec: PatchFix, planned: Any, raw: bytes, source: str, root: str, observed: Any
) -> dict:
    """The patch as the report keeps it, its checks still to come."""
    rel = diff_path(spec.file, root)
    return {
        "rule": planned.rule,
        "family": planned.family,
        "safety": planned.safety,
        "title": planned.title,
        "note": planned.note,
        "file": rel,
        "line": planned.line,
        "sha256": digest(raw),
        "diff": rewrite_package().unified_diff(source, planned.source, rel),
        "observed": observed,
        "checks": {},
        "verified": False,
    }


def _load_copy(spec: PatchFix, patched_source: str, root: str, tmp: str, device: Any) -> tuple:
    """The target's folder mirrored into `tmp`, the patched file written there, the user's modules
    dropped and the target loaded from the copy: (its workload, pristine copies, the file)."""
    from ...target.load import load_with_rebuild
    from ..pair import fresh_copies

    path, _, func = spec.target.rpartition(":")
    sandbox.mirror(root, tmp)
    copy_path = os.path.join(tmp, os.path.relpath(spec.file, root))
    with open(copy_path, "wb") as fh:
        fh.write(patched_source.encode("utf-8"))
    sandbox.drop_user_modules(root)
    pw, _ = load_with_rebuild(os.path.join(tmp, os.path.relpath(path, root)) + ":" + func)
    return pw, fresh_copies(pw, device), copy_path


def _eager_check(w: Any, made: list, originals: list, patched: list) -> Check:
    """Patched vs original, eager, on each call: equal by the numerics rule."""
    sames = [sandbox.same(o[0], p[0], w.autocast) for o, p in zip(originals, patched)]
    differ = [how for (how, _), same in zip(made, sames) if same["passed"] is not True]
    errs = [x["max_abs_err"] for x in sames if x.get("max_abs_err") is not None]
    return Check(
        passed=not differ,
        detail=f"patched vs original, eager, on {', '.join(how for how, _ in made)}: "
        + (f"differ on {', '.join(differ)}" if differ else "equal by the numerics rule")
        + f", {sum(x.get('tensors_compared', 0) for x in sames)} tensor(s) compared (outputs "
        f"and buffers), max abs error {max(errs) if errs else None}"
        + ("; parameters and gradients after the step too" if w.kind == "train" else ""),
    )


def _run_proofs(ctx: Any, checks: dict[str, Check]) -> None:
    """Each proof the rewrite names, looked up by name; a name with no proof fails."""
    from .proofs.registry import PROOFS

    for proof in ctx.planned.proofs:
        check = PROOFS.get(proof)
        if check is None:
            checks[f"proof {proof}"] = Check(passed=False, detail="no proof of this kind")
            continue
        checks.update(check(ctx))


def _prove(spec: PatchFix, w: Any, options: Any, row: dict, tmp: str) -> None:
    from ...probes import calls
    from ..pair import fresh_copies
    from .proofs import ProofContext

    root = os.path.dirname(os.path.abspath(spec.target.rpartition(":")[0]))
    raw, source = read_source(spec.file)
    device = calls.detect(w.model, w.call_args)
    fresh_o = fresh_copies(w, device)
    made = sandbox.calls(w)
    planned, observations = _replan(spec, source, w, fresh_o, device, made)
    if isinstance(planned, rewrite_package().NoRewrite):
        row.update(outcome=FixOutcome.NO_MECHANICAL_PATCH, why=planned.reason)
        return
    observed = observations[0][1] if observations else None
    row["patch"] = _record(spec, planned, raw, source, root, observed)
    originals = [sandbox.eager(w, fresh_o, ca, device) for _, ca in made]
    original = sandbox.module_at(spec.file)  # before the copy's modules replace it
    pw, fresh_p, copy_path = _load_copy(spec, planned.source, root, tmp, device)
    patched = [sandbox.eager(pw, fresh_p, ca, device) for _, ca in made]  # the same tensors
    checks = row["patch"]["checks"]
    checks["eager outputs"] = _eager_check(w, made, originals, patched)
    said_o, said_p = (
        sandbox.joined([o[1] for o in originals]),
        sandbox.joined([p[1] for p in patched]),
    )
    ctx = ProofContext(
        w, pw, fresh_o, fresh_p, device, planned, made, said_o, said_p, spec.file, copy_path,
        observations, original,
    )  # fmt: skip
    _run_proofs(ctx, checks)
    measure(spec, (w, pw, fresh_o, fresh_p), device, options, row, (tmp, root))
