"""The graphs of one compiled call, described once (report/layout.py): per graph its operator and
node counts and the user function (and line) its first traced operator came from. The HTML draws
it under the graph breaks, the Markdown after them; the terminal has the graph count as a key
figure instead.

Pitfall: the per-graph lists are torch._dynamo.explain's graphs (its own backend, DDPOptimizer
off), while the graph count is the compile's (report/counts.py): under DDP the two can differ, so
the source is the section's how line. A graph whose operators carry no user frame has no function.
"""

from __future__ import annotations

from .. import units
from ..report.layout import Section, Table, where
from ..report.sections import Graphs
from .breaks import more_line  # the '… and N more' line the break table says

HEADERS = ("graph", "ops", "nodes", "function", "from")


def section(graphs: Graphs) -> Section | None:
    """One row per graph (its number from 1, ops, nodes, function, file:line); None without any."""
    per_graph = graphs.per_graph or []
    if not per_graph:
        return None
    rows = [
        [
            str(i),
            units.count(g.get("ops")),
            units.count(g.get("nodes")),
            str(g.get("function") or ""),
            where(g.get("file"), g.get("line")) if g.get("function") else "",
        ]
        for i, g in enumerate(per_graph, 1)
    ]
    return Section(
        "Graphs",
        tables=(Table(HEADERS, rows, code=(3, 4), more=more_line(len(rows))),),
        method=graphs.per_graph_source or "",
    )
