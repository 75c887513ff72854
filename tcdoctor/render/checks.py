"""A gate's checks as a table (the GitHub step summary's head for `check`), described once
(report/layout.py): one row per check, its outcome's icon, name, figure, limit and reason, and the
gate's note under them. render/outline.py places it (`checks_page`); the Markdown draws it, escaped
as it escapes every table. The terminal's lines of a gate are checks/outcome.py `gate_lines`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..outcomes import Status
from ..report.layout import Note, Section, Table

if TYPE_CHECKING:
    from ..checks.outcome import CheckResult

TITLE = "Checks"
ICON = {Status.PASS: "✅", Status.FAIL: "❌", Status.ERROR: "⚠️", Status.INCONCLUSIVE: "❔"}


def section(results: Sequence[CheckResult], note: str | None = None) -> Section:
    rows = [[ICON[r.status], r.name, r.figure, r.limit, r.reason] for r in results]
    table = Table(("", "check", "figure", "limit", "reason"), rows)
    return Section(TITLE, tables=(table,), notes=(Note(note),) if note else ())
