"""A sweep's overview, described once (report/layout.py) for every format: the targets' table, the
summary, the notes, the speedup chart's section and how it was measured. render/outline.py places
them (`sweep_page`); the terminal, the Markdown and the HTML draw them as they draw a report's
sections (`TerminalRenderer().render_sweep(sweep)`, …), with no renderer of their own.

The targets' table is its columns (`COLUMNS`): each a header, its cell's text (units.py writes
every figure) and the value the HTML sorts it by. A column added there shows in every format
(tests/test_adding_a_figure.py plants one); a figure a row does not have yet is a field of
`SweepRow` (report/sweep.py, filled by `row_from_report`). A target without a report (failed,
missing) shows only the columns not read from a report.

Pitfalls: every string a target brings (its name, its reason) is text here, escaped by the format
that draws it (Jinja's autoescape, the Markdown's escaper); each target's link is its report's
path relative to the sweep folder, which the HTML and the sweep's own Markdown (a file beside the
reports) draw as links.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import units
from ..outcomes import Decision
from ..report.layout import Note, Section, Table, Text, notes
from ..report.sweep import METHOD, METHOD_CHANGES, Sweep, SweepRow

TARGETS, SUMMARY, NOTES, SPEEDUPS, HOW = (
    "Targets",
    "Summary",
    "Notes",
    "Speedup over eager (95% CI)",
    "How",
)
_ORDER = {
    Decision.COMPILE: 0,
    Decision.COMPILE_AFTER_FIXES: 1,
    Decision.CANT_TELL: 2,
    Decision.DONT_COMPILE: 3,
}


@dataclass(frozen=True)
class Column:
    """One column of the targets' table: its header, its cell's text, the value the HTML sorts
    it by (None sorts last); `reported`: read from the target's report, so blank for a target
    that has none; `optional`: drawn only when some row has its figure (its `sort` value), as the
    serving figures, which only a target analysed with a traffic has."""

    header: str
    text: Callable[[SweepRow], str]
    sort: Callable[[SweepRow], Any]
    reported: bool = True
    optional: bool = False


def _verdict(row: SweepRow) -> str:
    return units.decision_text(row.shown_verdict) if row.shown_verdict else "no verdict"


def _speedup(row: SweepRow) -> str:
    """The speedup and its interval; ', timed under load' where the processes decided no side."""
    loaded = ", timed under load" if row.timed_under_load else ""
    return units.ratio(row.speedup, row.speedup_ci) + loaded


def _break_even(row: SweepRow) -> str:
    if row.break_even_calls:
        return units.calls(row.break_even_calls)
    if row.speedup is not None and row.speedup <= 1:
        return "never (not faster)"
    return units.NA


def _took(row: SweepRow) -> str:
    """The analysis's wall time; blank for a target without a report that took none."""
    return "" if not (_reported(row) or row.duration_s) else units.seconds(row.duration_s)


def _figure(header: str, name: str, text: Callable[[Any], str], **kw: Any) -> Column:
    """A column of one SweepRow field: `text` writes it, the HTML sorts by its value."""
    return Column(header, lambda r: text(getattr(r, name)), lambda r: getattr(r, name), **kw)


COLUMNS: tuple[Column, ...] = (
    Column("target", lambda r: r.target, lambda r: r.target, reported=False),
    Column("status", lambda r: r.status, lambda r: r.status, reported=False),
    Column(
        "exit",
        lambda r: "" if r.exit_code is None else str(r.exit_code),
        lambda r: r.exit_code,
        reported=False,
    ),
    Column("verdict", _verdict, lambda r: _ORDER.get(r.shown_verdict or "")),
    _figure("breaks", "graph_breaks", units.count),
    _figure("recompiles", "recompiles", units.count),
    Column("speedup (95% CI)", _speedup, lambda r: r.speedup),
    Column(
        "compile cold / warm",
        lambda r: units.pair(units.seconds, r.cold_compile_s, r.warm_compile_s),
        lambda r: r.cold_compile_s,
    ),
    Column("break-even", _break_even, lambda r: r.break_even_calls),
    _figure("memory eager÷compiled", "memory_compression", units.ratio),
    Column(
        "numerics",
        lambda r: units.numerics_status(r.numerics),
        lambda r: None if r.numerics is None else int(r.numerics),
    ),
    _figure("p99 under traffic", "p99_s", units.seconds, optional=True),
    _figure("traffic compiles", "traffic_compiles", units.count, optional=True),
    # a Generation's (issue 60): the compiled side from a cold start, tokens/s once compiled
    _figure("TTFT p50", "ttft_p50_s", units.seconds, optional=True),
    _figure("ITL p99", "itl_p99_s", units.seconds, optional=True),
    _figure("tokens/s (steady)", "tokens_per_s", units.tokens_rate, optional=True),
    _figure("compiles during generation", "generation_compiles", units.count, optional=True),
    Column(
        "tokens equal",
        lambda r: units.of(r.tokens_equal, r.tokens_compared),
        lambda r: _share(r.tokens_equal, r.tokens_compared),
        optional=True,
    ),
    Column(
        "ran on",
        lambda r: r.ran_on.text if r.ran_on else "",
        lambda r: r.ran_on.text if r.ran_on else None,
        reported=False,
        optional=True,
    ),
    Column("took", _took, lambda r: r.duration_s, reported=False),
)


def _share(part: int | None, whole: int | None) -> float | None:
    """What a count of a whole sorts by: its share (None: unknown, or nothing counted)."""
    return part / whole if part is not None and whole else None


def columns(rows: Sequence[SweepRow]) -> list[Column]:
    """The columns drawn for these rows: every column, less an optional one no row has."""
    return [c for c in COLUMNS if not c.optional or any(c.sort(r) is not None for r in rows)]


def _reported(row: SweepRow) -> bool:
    """The target has a report its figures are read from (not failed, not missing)."""
    return row.status in ("complete", "incomplete")


def cells(row: SweepRow, cols: Sequence[Column] | None = None) -> list[str]:
    """The row's cells as text, one per column of `cols` (default: every column; blank where a
    target without a report has none)."""
    return [c.text(row) if _reported(row) or not c.reported else "" for c in cols or COLUMNS]


def sort_values(row: SweepRow, cols: Sequence[Column] | None = None) -> list[Any]:
    """What each of the row's cells sorts by (None sorts last)."""
    return [c.sort(row) for c in cols or COLUMNS]


def title(sweep: Sweep) -> str:
    shard = f", shard {sweep.shard}" if sweep.shard else ""
    analyses = sum(r.duration_s or 0.0 for r in sweep.rows)
    return (
        f"tcdoctor sweep: {len(sweep.rows)} target(s){shard}, torch {sweep.torch or '?'}, "
        f"backend {sweep.options.get('backend', '?')}; analyses {units.seconds(analyses)} "
        f"in all, this run's wall time {units.seconds(sweep.wall_s)}"
    )


def targets(sweep: Sweep) -> Section:
    """One row per target, its name linking its own report."""
    rows, cols = [], columns(sweep.rows)
    for r in sweep.rows:
        row: list[str] = cells(r, cols)
        row[0] = Text(row[0], href=r.report if _reported(r) else None)
        rows.append(row)
    table = Table(
        [c.header for c in cols],
        rows,
        sort=[sort_values(r, cols) for r in sweep.rows],
        states=[r.status for r in sweep.rows],
    )
    against = f" Changes are against {sweep.baseline}." if sweep.baseline else ""
    how = Note("Each target links to its own report." + against, how=True)
    return Section(TARGETS, tables=(table,), notes=(how,))


def summary(sweep: Sweep) -> Section:
    """The summary figures in words (report/sweep.py `Sweep.summary_lines`)."""
    return Section(SUMMARY, notes=notes(sweep.summary_lines()))


def sweep_notes(sweep: Sweep) -> Section | None:
    """Why each target is not complete, what changed against the baseline and a merge's findings,
    one line each; none when there is nothing to say."""
    lines = [
        f"{r.target}: {r.status} (exit {r.exit_code}): {r.reason}" for r in sweep.rows if r.reason
    ]
    for r in sweep.rows:
        lines += [f"{r.target}: {c['text']}" for c in r.changes or [] if c["kind"] != "new_target"]
    new = [r.target for r in sweep.rows if any(c["kind"] == "new_target" for c in r.changes or [])]
    lines += [f"not in the baseline: {', '.join(new)}"] if new else []
    lines += [f"{t}: in the baseline, not in this sweep" for t in sweep.removed]
    lines += [f"merge: {w}" for w in sweep.warnings]
    lines += [f"versions: {w}" for w in sweep.version_mismatches]
    lines += [f"niceness: {w}" for w in sweep.niceness_notes]
    lines += [f"load: {w}" for w in sweep.load_notes]
    return Section(NOTES, notes=notes(lines)) if lines else None


def speedups() -> Section:
    """The section the speedup chart (render/charts.py `speedups`) is drawn in."""
    return Section(SPEEDUPS)


def how(sweep: Sweep) -> Section:
    """How the summary is computed, and the changes against a baseline."""
    return Section(HOW, notes=notes([METHOD, *([METHOD_CHANGES] if sweep.baseline else [])]))
