"""The memory-attribution phase (issue 36): where a compiled call's peak above eager's is held, by
compiled graph (probes/memory_graphs.py; the wording and the join with each graph's user line in
report/attribution.py). In the warm process, after the memory phase it reads; below the growth
threshold (Rules.memory_growth_*) it calls nothing.

It fills part of the memory section (`memory.attribution`), so its row and its layout read that
(`Phase.reads`): one key-figure row (no growth, where the growth is, or why not measured) and the
table of the graphs that hold the growth, with the lines under it. A report made before the
attribution existed has none, and re-renders unchanged.
"""

from __future__ import annotations

from ... import units
from ..attribution import MemoryAttribution
from ..layout import Note, Section, Table, where
from .phase import IN_PROCESS, WARM, Phase

TITLE = "Memory growth by compiled graph"
HEADERS = ["graph", "starts at", "bytes at the compiled peak", "own peak"]


def _fill(data: dict, a: dict) -> None:
    data["memory"]["attribution"] = a  # joined with the compile graphs in derive (attach_memory)


def _not_measured(data: dict, sections: tuple[str, ...], why: str) -> None:
    data["memory"].setdefault("attribution", {"not_measured": why})


def summary(a: MemoryAttribution) -> str:
    """One line: no growth, where the growth is, or why it was not measured."""
    if a.not_measured and a.grew is None:
        return f"not measured ({a.not_measured})"
    per = "held and per call" if a.held else "per call"
    if not a.grew:
        g = a.growth_bytes
        if g == 0:
            if a.held:
                return "none (compiled holds and peaks at or below eager's)"
            return "none (compiled peaks at or below eager's)"
        return f"none above the threshold ({units.nbytes(g)} {per})"
    if a.not_measured:
        return f"{units.nbytes(a.growth_bytes)} {per}; by graph: not measured ({a.not_measured})"
    big = a.largest
    if not big:
        return f"{units.nbytes(a.growth_bytes)} per call; no compiled graph holds it"
    return (
        f"{units.nbytes(a.growth_bytes)} per call; largest: graph {big.get('compile_id')} "
        f"({big.get('function') or '?'}, {where(big.get('file'), big.get('line')).short}) "
        f"{units.nbytes(big.get('bytes'))}"
    )


def _row(a: MemoryAttribution) -> tuple[str, str, str]:
    return ("memory growth", summary(a), a.method or "")


def layout(a: MemoryAttribution) -> Section:
    """The graphs that hold the compiled call's extra memory, and the lines under them."""
    return Section(
        TITLE,
        summary=summary(a),
        tables=(Table(HEADERS, _rows(a), code=(1,)),),
        notes=_notes(a),
    )


def _rows(a: MemoryAttribution) -> list[list[str]]:
    if not a.grew or not a.graphs:
        return []
    return [
        [
            f"{g.get('compile_id')} {g.get('function') or ''}".strip(),
            where(g.get("file"), g.get("line")),
            units.nbytes(g.get("bytes")),
            units.nbytes(g.get("own_peak_bytes")),
        ]
        for g in a.graphs
    ]


def _notes(a: MemoryAttribution) -> tuple[Note, ...]:
    """Compile-time working set vs steady-state growth, what is outside every graph, the method."""
    if not a.grew or a.not_measured:
        return ()
    out = [
        Note(
            f"compile-time working set (RSS growth while compiling): "
            f"{units.nbytes(a.compile_working_set_bytes)}; steady-state growth per call: "
            f"{units.nbytes(a.growth_bytes)}"
        ),
    ]
    if a.outside_regions_bytes:
        out.append(
            Note(
                f"allocated outside every compiled region: {units.nbytes(a.outside_regions_bytes)}"
            )
        )
    out.append(Note(f"method: {a.method}; threshold: {a.threshold}", how=True))
    return tuple(out)


PHASES = (
    Phase(
        "memory_graphs",
        frozenset({WARM, IN_PROCESS}),
        (),
        measure="tcdoctor.probes.memory_graphs:phase_memory_graphs",
        order=105,
        fill=_fill,
        not_measured=_not_measured,
        reads=lambda report: report.memory.attribution,
        row=_row,
        layout=layout,
    ),
)
