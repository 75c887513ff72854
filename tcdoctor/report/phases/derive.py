"""Figures computed from several phases' results, after every phase's fill (run/assemble.py)."""

from __future__ import annotations

from .. import attribution, break_gain, compile_joins
from ..processes import claims, sequential
from ..sections import GUARDS_BY_REMOVAL, Runtime


def derive(data: dict) -> None:
    """Figures computed from several phases' results, after every fill."""
    results = data.pop("_timed", {})
    timed = sequential.timed(results)
    if timed and data["runtime"].get("speedup") is not None:
        data["runtime"].update(claims.combine(timed, sequential.sequence(results)))
    # Guards.overhead_fraction is taken of the compiled median the timing phase measured, or, for
    # a cost by removal, of the with-guards median of the same A/B samples (sections.guard_cost).
    median = Runtime.from_dict(data["runtime"]).compiled.median_s
    g = data["guards"]
    if g.get("overhead_source") != GUARDS_BY_REMOVAL:
        g["call_s"] = median
    elif median and (g.get("overhead_s_per_call") or 0.0) > median:  # measured in another process
        g["overhead_s_per_call"] = median
        g["overhead_method"] = (
            f"{g.get('overhead_method') or ''}; above the timing phase's compiled median: shown as it"
        )
    graphs = data["compile"].get("graphs")
    if graphs and any(r.get("median_self_s_per_call") is not None for r in graphs["rows"]):
        # a frame's profiled time, scaled so no part exceeds the compiled call it is part of
        rows, scale = compile_joins.scale_to_call(
            graphs["rows"],
            data["profile"].get("profiled_call_s"),
            median,
        )
        data["compile"]["graphs"] = dict(graphs, rows=rows, time_scale=scale)
    break_gain.attach(data)
    attribution.attach_memory(data)  # each growing graph joined with its user line (issue 36)
