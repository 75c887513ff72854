"""The graph_breaks phase: graphs and breaks, as explain() finds them (probes/graph_breaks.py)."""

from __future__ import annotations

from ... import units
from ..sections import GraphBreaks
from .phase import MAIN, Phase, plural


def _headline(d: dict) -> str | None:
    """'2 breaks, 3 graphs' (and the frames Dynamo skipped)."""
    breaks, graphs = units.get(d, "graph_breaks.count"), units.get(d, "graphs.count")
    if breaks is None and graphs is None:
        return None
    parts = [
        plural(breaks, "break") if breaks is not None else None,
        plural(graphs, "graph") if graphs is not None else None,
    ]
    skipped = units.get(d, "graph_breaks.skipped_frames")
    if skipped:
        parts.append(plural(skipped, "skipped frame"))
    return ", ".join(p for p in parts if p)


PHASES = (
    Phase(
        "graph_breaks",
        MAIN,
        ("graphs", "graph_breaks"),
        measure="tcdoctor.probes.graph_breaks:phase_graph_breaks",
        order=30,
        record=GraphBreaks,
        label="graph breaks",
        headline=_headline,
    ),
)
