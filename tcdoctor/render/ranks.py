"""A distributed run's ranks, described once (report/layout.py) for every format: the rank table
(one row per rank), the slowest rank of each phase beside the fastest rank's time, the summary
lines (process group, compile skews, DDP, divergences, missing ranks) and how each cross-rank
figure was measured (how lines: not in the terminal).

Nothing here knows a format; the figures are units.py's text, as everywhere.
"""

from __future__ import annotations

from .. import units
from ..report.layout import Note, Section, Table, notes
from ..report.sections import Distributed, RankRow

HEADERS = [
    "rank",
    "host",
    "graphs",
    "breaks",
    "recompiles",
    "guards",
    "first call (cold)",
    "first call (warm)",
    "step median (95% CI)",
    "peak mem",
    "",
]
SLOWEST_HEADERS = ("phase", "slowest rank", "its time", "fastest rank's time")


def _step(r: RankRow) -> str:
    """The rank's step median and its bootstrap CI."""
    ci = r.step_ci_s
    med = units.seconds(r.step_median_s)
    return med + (f" ({units.seconds(ci[0])}–{units.seconds(ci[1])})" if ci else "")


def _status(r: RankRow, sec: Distributed) -> str:
    """What the last column says: a rank that did not finish, the phases it was slowest in."""
    marks = []
    if r.finished is False:
        marks.append("DID NOT FINISH")
    slow = [
        p
        for p, s in (sec.slowest or {}).items()
        if s.rank == r.rank and p in ("compile", "compile_warm", "runtime")
    ]
    if slow:
        marks.append("slowest: " + ", ".join(slow))
    return "; ".join(marks)


def section(sec: Distributed | None) -> Section | None:
    """A distributed run's rank table, its slowest ranks, the lines under them and how each
    cross-rank figure was measured, for every format."""
    if not sec:
        return None
    how = tuple(Note(f"{k}: {v}.", how=True) for k, v in (sec.method or {}).items())
    return Section(
        "Ranks",
        detail=f"{len(sec.ranks)} of {sec.world_size}",
        tables=(Table(HEADERS, rows(sec)), Table(SLOWEST_HEADERS, slowest_rows(sec))),
        notes=notes(summary_lines(sec)) + how,
    )


def slowest_rows(sec: Distributed) -> list[list[str]]:
    """Per phase: the slowest rank, its time and the fastest rank's time."""
    return [
        [p, str(s.rank), units.seconds(s.seconds), units.seconds(s.fastest_s)]
        for p, s in (sec.slowest or {}).items()
    ]


def rows(sec: Distributed) -> list[list[str]]:
    """One list of cells (text, as HEADERS) per rank."""
    return [
        [
            str(r.rank),
            str(r.host or ""),
            units.count(r.graphs),
            units.count(r.graph_breaks),
            units.count(r.recompiles),
            units.count(r.guards),
            units.seconds(r.first_call_s),
            units.seconds(r.warm_first_call_s),
            _step(r),
            units.nbytes(r.peak_bytes),
            _status(r, sec),
        ]
        for r in sec.ranks or []
    ]


def _skew(value: float | None, fraction: float | None, timeout_s: float | None) -> str:
    return units.seconds(value) + (
        f" ({fraction:.1%} of the {units.seconds(timeout_s)} timeout)"
        if fraction is not None
        else ""
    )


def summary_lines(sec: Distributed) -> list[str]:
    """The lines under the table: process group, compile skews, DDP, divergences, missing ranks."""
    out = [
        f"world size {sec.world_size}, backend {sec.backend}, process-group timeout "
        f"{units.seconds(sec.timeout_s)} ({sec.timeout_source or 'as given'})",
        "compile skew, cold/cold: "
        + _skew(sec.compile_skew_s, sec.compile_skew_fraction, sec.timeout_s),
        "compile skew, cold/warm (mixed cache): "
        + _skew(sec.mixed_cache_skew_s, sec.mixed_cache_skew_fraction, sec.timeout_s),
    ]
    ddp = sec.ddp
    if ddp is not None and ddp.wrapper:
        out.append(
            f"{ddp.wrapper}: optimize_ddp={ddp.optimize_ddp} ({ddp.mode}), bucket_cap_mb="
            f"{ddp.bucket_cap_mb}, DDPOptimizer subgraphs at the first call: {ddp.subgraphs}"
        )
    for d in sec.divergences or []:
        out.append(f"DIVERGENCE: {d.text} — hang risk: {d.risk}")
    if sec.missing_ranks:
        out.append(
            f"ranks not in this report: {sec.missing_ranks} (other nodes: join their reports with tcdoctor merge)"
        )
    return out
