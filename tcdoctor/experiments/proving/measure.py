"""What a proven patch changes, measured on the patched copy: its breaks, then the real backend's
row against the original's eager code.

Method. Breaks are counted on the patched copy as the main analysis counts them (the cheap
`eager` backend, PyTorch's graph-break log): fewer than before, and none at a site that had none
(sites keyed by file and reason: a patch moves lines, so lines are not matched; the sites are a
multiset, the same site may break more than once). Then the real backend measures the patched
copy compiled against the ORIGINAL eager (`pair.timed_pair`: first call, paired timing, compiled
numerics by the numerics rule): the patched eager may be slower (torch.cond in eager traces its
branches on every call), so against it a gain would read larger than it is. Its speedup over the
unpatched compiled model is the ratio of the two speedups, both against the same eager code.

Pitfall: a break reason may be empty: it is keyed as "".
"""

from __future__ import annotations

import os
from typing import Any, Callable

from ...report.sections.fixes import Check, FixSide
from ..specs import PatchFix
from .plan import first_line, rewrite_package


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


def key(site: dict, base: str) -> tuple[str, str]:
    """A break site as (file, reason): a patch moves lines, so lines are not matched."""
    return _rel(site.get("file") or "", base), first_line(site.get("reason"))


def new_sites(
    before: list[dict], root: str, after: list[dict], copy_root: str, fixed: tuple[str, str]
) -> list[dict]:
    """Break sites after the patch that were not there before, counted as a multiset (the same
    site may break more than once); the patched site `fixed` (file, reason) is taken off first."""
    pool = [key(f, root) for f in before]
    if fixed in pool:
        pool.remove(fixed)
    new = []
    for r in after:
        k = key(r, copy_root)
        if k in pool:
            pool.remove(k)
        else:
            new.append({**r, "file": k[0]})
    return new


def break_checks(spec: PatchFix, pw: Any, row: dict, tmp: str, root: str) -> None:
    """The patched copy's breaks (cheap backend) against the original's: "fewer breaks" and "no
    new break", with the count in `row["cheap"]`."""
    from .. import fixes

    checks, before = row["patch"]["checks"], FixSide.of(**spec.before)
    cheap = fixes._cheap_breaks(pw)
    row["cheap"] = cheap
    b_count = before.graph_breaks
    fixed = key({"file": spec.file, "reason": spec.gb_type}, root)
    new = new_sites(before.sites or [], root, cheap.get("remaining") or [], tmp, fixed)
    rule = rewrite_package().rule(str(row["patch"].get("rule") or ""))
    leaves = rule.leaves if rule is not None else ()
    left = [r for r in new if first_line(r.get("reason")) in leaves]
    new = [r for r in new if first_line(r.get("reason")) not in leaves]
    fewer = b_count is not None and cheap["graph_breaks"] < b_count
    checks["fewer breaks"] = Check(
        passed=fewer,
        detail=f"graph breaks {b_count} → {cheap['graph_breaks']} (backend='eager', "
        "counted from PyTorch's graph-break log as the main analysis counts them)",
    )
    detail = (
        "none at a site that had none"
        if not new
        else "new: "
        + "; ".join(f"{r['file']}:{r.get('line')} {first_line(r.get('reason'))}" for r in new[:3])
    )
    if left:
        detail += f"; {len(left)} the rule leaves by design ({first_line(left[0].get('reason'))})"
    checks["no new break"] = Check(passed=not new, detail=detail)


def _makers(w: Any, pw: Any, fresh_o: Callable, fresh_p: Callable, options: Any) -> tuple:
    """(the function that makes the original eager and the patched copy compiled, its label)."""
    from ...probes.first_call import build

    backend, mode = options.backend, options.mode
    if w.kind == "train":
        from ..training import StepRunner

        def make() -> tuple[Any, Any]:
            runner = StepRunner(fresh_p(), "eager")
            compiled = build(runner.step, backend, mode, runner.spec.compile_kwargs)
            return StepRunner(fresh_o(), "eager"), compiled

        return make, "train step"

    def make_forward() -> tuple[Any, Any]:
        return fresh_o().model, build(fresh_p().model, backend, mode, pw.compile_kwargs)

    return make_forward, "forward"


def measure(
    spec: PatchFix,
    copies: tuple[Any, Any, Callable, Callable],
    device: Any,
    options: Any,
    row: dict,
    where: tuple[str, str],
) -> None:
    """Breaks on the patched copy (cheap backend, sites), then the real backend's row: the
    patched copy compiled, timed against the original eager. `copies`: the workload, the patched
    copy's, and pristine copies of each; `where`: the copy's folder and the target's."""
    from .. import fixes
    from ..pair import timed_pair

    w, pw, fresh_o, fresh_p = copies
    tmp, root = where
    break_checks(spec, pw, row, tmp, root)
    checks = row["patch"]["checks"]
    make, label = _makers(w, pw, fresh_o, fresh_p, options)
    real = timed_pair(
        make,
        w,
        label,
        options.budget_s,
        device,
        options,
        options.backend,
        against=FixSide.of(**spec.before).speedup,
        mode=options.mode,
    )
    after = fixes.after_figures(real)
    row["after"] = after
    checks["compiled numerics"] = Check(
        passed=after.numerics_passed is True,
        detail="the patched copy compiled vs the original eager, by the numerics rule: "
        + {True: "pass", False: "fail", None: "not compared"}[after.numerics_passed]
        + (f" (max abs error {after.max_abs_err})" if after.max_abs_err is not None else ""),
    )
    outcome = fixes.outcome(FixSide.of(**spec.before), after, row["cheap"])
    failed, word, why = fixes.judge_patch(checks, outcome)
    row["patch"].update(verified=not failed, failed=failed)
    row.update(outcome=word, why=why)
