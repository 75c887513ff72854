"""The source patches of a report (fix rows of kind "patch", experiments/patches.py) as text every
renderer shows: one heading per patch (where, rule, safety, verified or what failed), its checks,
what it measured, the note the user must know, and its unified diff; and the patch file written
beside the report (`tcdoctor-patches.diff`: verified patches only, one per file, applies with
`git apply` or `patch -p1` from the target's folder).

Pitfall: patches of one file are each proven against the original file, so they do not stack:
the diff file holds the best verified patch of each file, and says so when it left one out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    return [
        f"{'pass' if c.get('passed') else 'FAIL'}  {name}: {c.get('detail')}"
        for name, c in checks.items()
    ]


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


def _best(rows: list[FixRow]) -> FixRow:
    return max(rows, key=lambda r: (r.after or {}).get("speedup") or 0.0)


def _by_file(report: Report) -> dict[str, list[FixRow]]:
    by_file: dict[str, list[FixRow]] = {}
    for r in patch_rows(report):
        if r.patch is not None and r.patch.verified:
            by_file.setdefault(str(r.patch.file), []).append(r)
    return by_file


def chosen_rows(report: Report) -> list[FixRow]:
    """The verified patch of each file that the diff file holds: the fastest compiled one."""
    return [_best(rows) for rows in _by_file(report).values()]


def diff_file(report: Report) -> str | None:
    """The text of tcdoctor-patches.diff (None when no patch was verified)."""
    by_file = _by_file(report)
    if not by_file:
        return None
    lines = [HEADER, f"# {report.target}"]
    chosen = []
    for path, rows in by_file.items():
        best = _best(rows)
        chosen.append(best)
        left = [r for r in rows if r is not best]
        if left:
            at = ", ".join(f"line {r.patch.line}" for r in left if r.patch is not None)
            lines.append(
                f"# {path}: {len(left)} other verified patch(es) left out ({at}): "
                "each was proven against the original file; apply this one and analyse again"
            )
    for r in chosen:
        p = r.patch
        assert p is not None
        lines.append(f"# {p.rule} {p.safety}: {p.title} (compiled {r.vs_eager()} vs eager)")
    return "\n".join(lines) + "\n" + "".join(diff_of(r) + "\n" for r in chosen)
