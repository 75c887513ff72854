"""Graph and break counts from the compile the user runs, with explain's figures kept beside them.

Method. The graph-break phase traces one call with `torch._dynamo.explain`, which compiles with a
backend of its own: under DDP that means without DDPOptimizer, so it can trace a different program
from the one the user's `torch.compile` runs (the user's backend, mode and compile arguments,
DDPOptimizer on by default). The compile phase's first call is the user's own compile; PyTorch's
counters and graph-break log are read right after it (`probes.graph_breaks.counted`). Its figures
replace explain's in the `graphs` and `graph_breaks` sections; explain's run stays as
`explain_run_count` (its counters) next to explain's own `explain_graph_count` /
`explain_graph_break_count`, and `per_graph` (op lists) is still explain's, labelled by `source`.

Used in both processes, so the figures are one: the cold child applies it to its own results after
the compile phase (the fixes it plans address these findings' ids), the parent when it fills the
report (report/phases/compile.py). Torch-free.
"""

from __future__ import annotations

PER_GRAPH_SOURCE = (
    "torch._dynamo.explain's graphs (its own backend, DDPOptimizer off); the count is the compile's"
)


def use_compile_counts(explained: dict | None, counted: dict | None) -> dict | None:
    """The graph-break phase's result ({"graphs", "graph_breaks"}) with the compile's counts in it.

    `explained` is None when that phase did not finish: the compile's counts stand alone then.
    `counted` is None when the compile phase did not count (an older child): unchanged."""
    if not counted:
        return explained
    explained = explained or {}
    graphs = dict(explained.get("graphs") or {})
    breaks = dict(explained.get("graph_breaks") or {})
    for sec in (graphs, breaks):
        sec.pop("not_measured", None)
    if "count" in graphs:
        graphs["explain_run_count"] = graphs["count"]
    if "count" in breaks:
        breaks["explain_run_count"] = breaks["count"]
    graphs.update(count=counted["graphs"], source=counted["source"])
    if graphs.get("per_graph"):
        graphs["per_graph_source"] = PER_GRAPH_SOURCE
    breaks.update(
        count=counted["graph_breaks"],
        source=counted["source"],
        **{
            k: counted[k]
            for k in (
                "dynamo_counters_graph_break",
                "skipped_frames",
                "unlogged_fallbacks",
                "unique",
            )
        },
    )
    return {"graphs": graphs, "graph_breaks": breaks}
