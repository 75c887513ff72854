"""The fixes a report tried, described once for every format (report/layout.py): the "Tried" table
of the fixes that need no source edit (and those planned but not tried), one section per source
patch (fix rows of kind "patch", experiments/patches.py: a heading with where, rule, safety,
verified or what failed; its checks, what it measured, the note the user must know, and its
unified diff), and "Which layer" (the backend ablation); and the patch file written
beside the report (`tcdoctor-patches.diff`: verified patches only, one per file, applies with
`git apply` or `patch -p1` from the target's folder).

Pitfall: patches of one file are each proven against the original file, so they do not stack:
the diff file holds the verified patch of each file that report/sections/fixes.py `choose`
chose, and says so when it left one out.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .. import units
from ..report.layout import Note, Section, Table
from ..report.sections.fixes import choose

if TYPE_CHECKING:
    from ..report.model import Report
    from ..report.sections import FixRow

DIFF_NAME = "tcdoctor-patches.diff"
HEADER = "# tcdoctor: verified source patches; apply from the target's folder with `git apply` or `patch -p1`"


def patch_rows(report: Report) -> list[FixRow]:
    """The fix rows that are source patches (tried, with a patch planned)."""
    return [r for r in report.fixes or [] if r.patch is not None]


def other_rows(report: Report) -> list[FixRow]:
    """The tried fixes that need no source edit."""
    return [r for r in report.fixes or [] if r.patch is None]


def status(row: FixRow) -> str:
    """'verified' or 'not verified: failed eager stdout, fewer breaks'."""
    p = row.patch
    if p is not None and p.verified:
        return "verified"
    failed = p.failed if p is not None else []
    return "not verified" + (f": failed {', '.join(failed)}" if failed else f" ({row.outcome})")


def heading(row: FixRow) -> str:
    """'print_stat.py:15 — TCD201 guard-logging, unsafe: <title> — verified'."""
    p = row.patch
    assert p is not None
    return f"{p.file}:{p.line} — {p.rule} {p.family}, {p.safety}: {p.title} — {status(row)}"


def check_lines(row: FixRow) -> list[str]:
    """One line per check: 'pass  eager outputs: patched vs original, ...'."""
    checks = row.patch.checks if row.patch is not None else {}
    return [f"{'pass' if c.passed else 'FAIL'}  {name}: {c.detail}" for name, c in checks.items()]


def measured(row: FixRow) -> str:
    """What the patched copy measured: breaks and speedups before → after, and the outcome."""
    summary = row.summary
    return (
        f"{row.outcome}"
        + (f" ({summary})" if summary else "")
        + (f"; {row.why}" if row.why else "")
    )


def diff_of(row: FixRow) -> str:
    return ((row.patch.diff if row.patch is not None else None) or "").rstrip("\n")


def diff_file(report: Report) -> str | None:
    """The text of tcdoctor-patches.diff (None when no patch was verified)."""
    chosen = choose(report.fixes or [])
    if not chosen:
        return None
    lines = [HEADER, f"# {report.target}"]
    for c in chosen:
        if c.left_out:
            at = ", ".join(f"line {r.patch.line}" for r in c.left_out if r.patch is not None)
            lines.append(
                f"# {c.path}: {len(c.left_out)} other verified patch(es) left out ({at}): "
                "each was proven against the original file; apply this one and analyse again"
            )
    for c in chosen:
        p = c.row.patch
        assert p is not None
        lines.append(f"# {p.rule} {p.safety}: {p.title} (compiled {c.row.vs_eager()} vs eager)")
    return "\n".join(lines) + "\n" + "".join(diff_of(c.row) + "\n" for c in chosen)


TRIED_HEADERS = ("fix", "addresses", "outcome", "before → after", "why")
HOW_FIXES = (
    "a config switch first with backend='eager' (does the break go away?), and with the real "
    "backend only if it did. Shape and region fixes are the strategy rows below, not compiled again."
)
HOW_PATCHES = (
    "each patch was applied to a copy of the target's folder (never your file) and proven in a "
    "fresh process: graph breaks counted as PyTorch counts them (fewer, none new), the patched "
    "copy's eager outputs and buffers against the original's on the workload's inputs and every "
    "variant (and its printed output, warnings and log records where the patch guards them; a "
    "branch rewrite on inputs taking each branch, counted where its if ran, with its predicate "
    "and gradients; a custom op with torch.library.opcheck and compiled on every variant), "
    "compiled numerics by the numerics rule, and the patched copy compiled timed against the "
    "original eager; verified only when every check holds. The verified ones are in "
    f"{DIFF_NAME} beside the report."
)


def _how_fixes(report: Report) -> str:
    """How the fixes without a source edit were run (which process, which cache)."""
    if any(r.cache_start for r in report.fixes or []):
        where = (
            "each fix ran with the real backend (paired timing vs eager, numerics, compile) in a "
            "process other than the main analysis's: in the warm process after its own "
            "measurements when nothing it needs is set at process start, else in a fresh process "
            "of its own started from a copy of the main cache"
        )
    else:
        where = (
            "each fix ran in a fresh process with the real backend (paired timing vs eager, "
            "numerics, compile)"
        )
    return f"{where}; {HOW_FIXES}"


def _not_tried(report: Report) -> tuple[Note, ...]:
    """The fixes planned but not tried, and why (named as the plan names them)."""
    return tuple(Note(f"not tried: {nt.name}: {nt.why}") for nt in report.fixes_not_tried or ())


def tried_section(report: Report) -> Section | None:
    """The fixes tried without a source edit (fix, what it addresses, outcome, before → after,
    why) and those planned but not tried; None when there are neither."""
    rows = other_rows(report)
    table = Table(
        TRIED_HEADERS,
        [
            [r.fix or "", ", ".join(r.addresses), r.outcome or "", r.summary, r.why or ""]
            for r in rows
        ],
        code=(0,),
        detail=(1, 4),
    )
    sec = Section(
        "Tried (no source edit)",
        tables=(table,),
        notes=_not_tried(report),
        method=_how_fixes(report) if rows else "",
    )
    return None if sec.empty else sec


def patch_sections(report: Report) -> list[Section]:
    """One section per source patch: its checks, what it measured, its note and its diff; how
    the patches were proven is said once, under the last."""
    out = []
    for row in patch_rows(report):
        note = row.patch.note if row.patch is not None else None
        lines = [*check_lines(row), f"measured: {measured(row)}"] + (
            [f"note: {note}"] if note else []
        )
        out.append(
            Section(
                f"Source patch {heading(row)}",
                notes=tuple(Note(x) for x in lines),
                diff=diff_of(row),
            )
        )
    if out:
        out[-1] = replace(out[-1], method=HOW_PATCHES)
    return out


def layer_section(report: Report) -> Section | None:
    """Which layer a loss or a failure comes from: each backend's speed, numerics and graph
    breaks (the ablation), and the layer it points to."""
    ab = report.ablation
    if ab is None:
        return None
    table = Table(
        ("backend", "source", "vs eager", "numerics", "graph breaks"),
        [
            [
                x.backend or "",
                x.source or "",
                units.ratio(x.speedup, x.speedup_ci),
                units.numerics_status(x.numerics_passed),
                units.count(x.graph_breaks),
            ]
            for x in ab.rows
        ],
        code=(0,),
        detail=(1,),
    )
    return Section(
        "Which layer", tables=(table,), notes=(Note(f"→ {ab.layer}"),) if ab.layer else ()
    )


def sections(report: Report) -> list[Section]:
    """Everything tried, in the order every format shows it: the fixes, the patches, the layer."""
    out = [tried_section(report), *patch_sections(report), layer_section(report)]
    return [s for s in out if s is not None]
