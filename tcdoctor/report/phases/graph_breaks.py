"""The graph_breaks phase: graphs and breaks, as explain() finds them (probes/graph_breaks.py)."""

from __future__ import annotations

from ..sections import GraphBreaks
from .phase import MAIN, Phase

PHASES = (
    Phase(
        "graph_breaks",
        MAIN,
        ("graphs", "graph_breaks"),
        measure="tcdoctor.probes.graph_breaks:phase_graph_breaks",
        order=30,
        record=GraphBreaks,
    ),
)
