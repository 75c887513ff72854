"""`tcdoctor fix`: the verified source patches of an analysis, shown as a diff or written.

As ruff does: the diff is the default, nothing is written without `--apply`, and a patch whose
safety class is unsafe (`Safety.UNSAFE`: it changes what compiled runs do, a guarded print is
skipped, a branch becomes torch.cond) is written only with `--unsafe`: a patch is written when its
safety is at most the one allowed (`Safety` is ordered, SAFE < UNSAFE, as ruff's Applicability).
`--select`/`--ignore` keep patches by rule code or prefix. The exit code gates CI as ruff's does:
1 when `--diff` shows a change or `--apply` leaves a chosen patch unwritten, 0 when there is
nothing to change. Only patches verified by the analysis (experiments/proving/) are ever written,
the one per file that report/sections/fixes.py `choose` chose.

Before writing, the file must be the one the analysis patched: the sha256 of its bytes equals the
one the report kept, and the rewrite planned again from it (experiments/rewrite/, with the shapes
the analysis observed) gives the same diff the report holds. Otherwise nothing is written for that
file, and the line says why (analyse again).

Files are kept byte for byte: the text keeps its line endings and byte-order mark, and the file
is written in place (its inode: mode, owner, hard links and a symlink's target kept), after a
backup copy beside it that is put back if the write fails and removed once it succeeded.

Torch-free: it reads the saved report and rewrites text.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from typing import Sequence

from .errors import UsageError
from .experiments import rewrite
from .experiments.specs import PatchFix
from .outcomes import FixAction, Safety
from .render.patches import diff_of
from .report.model import Report
from .report.sections import FixRow
from .report.sections.fixes import choose


@dataclass(frozen=True)
class Outcome:
    """What happened to one verified patch: written, shown only, or refused (with why)."""

    path: str
    rule: str
    safety: Safety
    action: FixAction
    why: str = ""


def codes(values: Sequence[str]) -> tuple[str, ...]:
    """`--select`/`--ignore` values (each may be comma-separated) as codes or prefixes, each
    checked against the rules: an unknown one is a usage error (exit 2)."""
    out = tuple(c.strip().upper() for v in values for c in v.split(",") if c.strip())
    known = [r.code for r in rewrite.RULES]
    for c in out:
        if not any(k.startswith(c) for k in known):
            raise UsageError(
                f"unknown rule code {c!r}: the rules are {', '.join(known)} (tcdoctor rules)"
            )
    return out


def _file_of(row: FixRow) -> str:
    fix = (row.spec or {}).get("fix") or {}
    return str(fix.get("file") or "")


def _replan(row: FixRow, source: str) -> str | None:
    """The patched source, planned again from `source` as the analysis planned it; None when the
    rewrite no longer gives the report's diff."""
    try:
        fix = PatchFix.from_dict(row.spec or {})
    except ValueError:  # a hand-edited report whose row is no patch's: refused, never a traceback
        return None
    patch = row.patch
    assert patch is not None
    site = rewrite.Site(line=fix.at_line, gb_type=fix.gb_type, gb_id=fix.gb_id, file=fix.file)
    planned = rewrite.plan(source, site, patch.observed)
    if isinstance(planned, rewrite.NoRewrite):
        return None
    if rewrite.unified_diff(source, planned.source, str(patch.file)) != patch.diff:
        return None
    return planned.source


def chosen(report: Report, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> list[FixRow]:
    return [c.row for c in choose(report.fixes or [], select, ignore)]


def apply(
    report: Report,
    write: bool,
    unsafe: bool,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
) -> list[Outcome]:
    """Each chosen verified patch: written (with `write`, safe ones or `unsafe` too), else shown."""
    out = []
    allowed = Safety.UNSAFE if unsafe else Safety.SAFE
    for row in chosen(report, select, ignore):
        p = row.patch
        assert p is not None
        path, rule, safety = _file_of(row), str(p.rule), Safety.of(p.safety)
        if not write:
            out.append(Outcome(path, rule, safety, FixAction.SHOWN))
            continue
        if safety > allowed:
            out.append(
                Outcome(path, rule, safety, FixAction.REFUSED, "unsafe: pass --unsafe to write it")
            )
            continue
        why = _refusal(row, path)
        if why:
            out.append(Outcome(path, rule, safety, FixAction.REFUSED, why))
            continue
        with open(path, "rb") as fh:
            patched = _replan(row, fh.read().decode("utf-8"))
        if patched is None:
            out.append(
                Outcome(
                    path, rule, safety, FixAction.REFUSED, "the rewrite no longer gives the diff"
                )
            )
            continue
        write_in_place(path, patched.encode("utf-8"))
        out.append(Outcome(path, rule, safety, FixAction.WRITTEN))
    return out


def _refusal(row: FixRow, path: str) -> str | None:
    """Why a patch must not be written to `path` now (None: it may)."""
    if not path or not os.path.isfile(path):
        return f"{path or 'the file'} is not there: analyse again"
    with open(path, "rb") as fh:
        raw = fh.read()
    if row.patch is None or hashlib.sha256(raw).hexdigest() != row.patch.sha256:
        return "the file changed since the analysis: analyse again"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "the file is not UTF-8 text"
    return None


def write_in_place(path: str, data: bytes) -> None:
    """`data` written into the file at `path` itself: its inode, so its mode, owner and hard links
    stay, and a symlink's target is what changes. A backup copy beside the real file is made
    first, put back if the write fails, and removed once the write is synced."""
    real = os.path.realpath(path)
    backup = os.path.join(os.path.dirname(real), f".{os.path.basename(real)}.tcdoctor-backup")
    shutil.copyfile(real, backup)
    try:
        with open(real, "r+b") as fh:
            fh.write(data)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        shutil.copyfile(backup, real)  # the old bytes back into the same inode
        raise
    os.remove(backup)


def diffs(report: Report, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> str:
    """Every chosen verified patch's diff, as one text."""
    return "".join(diff_of(r) + "\n" for r in chosen(report, select, ignore))


def suppressed(report: Report) -> list[str]:
    """The breaks a `# tcdoctor: ignore[...]` comment kept from being patched, one line each."""
    out = []
    for nt in report.fixes_not_tried or []:
        fix, why = nt.fix, str(nt.why or "")
        if fix.get("kind") == "patch" and why.startswith("suppressed:"):
            out.append(f"{nt.name}: {why}")
    return out


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """ruff's: 1 when a change is shown (`--diff`) or a chosen patch was left unwritten
    (`--apply`), 0 when nothing is left to change."""
    return 1 if any(o.action in (FixAction.SHOWN, FixAction.REFUSED) for o in outcomes) else 0


def require_patches(report: Report) -> None:
    """A report of an analysis that tried no patches cannot be fixed from: one line, exit 2."""
    if report.options.get("fixes") is False:
        raise UsageError("the report was made with --no-fixes: no patch was tried")
