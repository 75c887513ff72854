"""`tcdoctor fix`: the verified source patches of an analysis, shown as a diff or written.

As ruff does: the diff is the default, nothing is written without `--apply`, and a patch whose
safety class is "unsafe" (it changes what compiled runs do: a guarded print is skipped, a branch
becomes torch.cond) is written only with `--unsafe`. Only patches verified by the analysis
(experiments/patches.py) are ever written, the best one per file (render/patches.py).

Before writing, the file must be the one the analysis patched: its sha256 equals the one the
report kept, and the rewrite planned again from it (experiments/rewrite.py, with the shapes the
analysis observed) gives the same diff the report holds. Otherwise nothing is written for that
file, and the line says why (analyse again).

Torch-free: it reads the saved report and rewrites text.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from .errors import UsageError
from .experiments import rewrite
from .render.patches import chosen_rows, diff_of
from .report.files import write_atomic
from .report.model import Report
from .report.sections import FixRow


@dataclass(frozen=True)
class Outcome:
    """What happened to one verified patch: written, shown only, or refused (with why)."""

    path: str
    rule: str
    safety: str
    action: str  # "written" | "shown" | "refused"
    why: str = ""


def _file_of(row: FixRow) -> str:
    fix = (row.spec or {}).get("fix") or {}
    return str(fix.get("file") or "")


def _replan(row: FixRow, source: str) -> str | None:
    """The patched source, planned again from `source` as the analysis planned it; None when the
    rewrite no longer gives the report's diff."""
    fix, patch = (row.spec or {}).get("fix") or {}, row.patch
    assert patch is not None
    site = rewrite.Site(
        line=int(fix.get("at_line") or 0),
        gb_type=fix.get("gb_type") or "",
        gb_id=fix.get("gb_id"),
        file=fix.get("file"),
    )
    planned = rewrite.plan(source, site, patch.observed)
    if isinstance(planned, rewrite.NoRewrite):
        return None
    if rewrite.unified_diff(source, planned.source, str(patch.file)) != patch.diff:
        return None
    return planned.source


def apply(report: Report, write: bool, unsafe: bool) -> list[Outcome]:
    """Each chosen verified patch: written (with `write`, safe ones or `unsafe` too), else shown."""
    out = []
    for row in chosen_rows(report):
        p = row.patch
        assert p is not None
        path, rule, safety = _file_of(row), str(p.rule), str(p.safety)
        if not write:
            out.append(Outcome(path, rule, safety, "shown"))
            continue
        if safety != "safe" and not unsafe:
            out.append(Outcome(path, rule, safety, "refused", "unsafe: pass --unsafe to write it"))
            continue
        why = _refusal(row, path)
        if why:
            out.append(Outcome(path, rule, safety, "refused", why))
            continue
        with open(path, encoding="utf-8") as fh:
            patched = _replan(row, fh.read())
        if patched is None:
            out.append(
                Outcome(path, rule, safety, "refused", "the rewrite no longer gives the diff")
            )
            continue
        write_atomic(path, patched)
        out.append(Outcome(path, rule, safety, "written"))
    return out


def _refusal(row: FixRow, path: str) -> str | None:
    """Why a patch must not be written to `path` now (None: it may)."""
    if not path or not os.path.isfile(path):
        return f"{path or 'the file'} is not there: analyse again"
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    if row.patch is None or digest != row.patch.sha256:
        return "the file changed since the analysis: analyse again"
    return None


def diffs(report: Report) -> str:
    """Every chosen verified patch's diff, as one text."""
    return "".join(diff_of(r) + "\n" for r in chosen_rows(report))


def require_patches(report: Report) -> None:
    """A report of an analysis that tried no patches cannot be fixed from: one line, exit 2."""
    if report.options.get("fixes") is False:
        raise UsageError("the report was made with --no-fixes: no patch was tried")
