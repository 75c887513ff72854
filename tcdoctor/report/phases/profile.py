"""The profile phase: the profiler's view of a compiled call and guard cost by removal
(probes/profile.py, probes/guard_ab.py), in the warm process."""

from __future__ import annotations

from ... import units
from .. import compile_joins
from ..sections import GUARDS_BY_REMOVAL, guard_cost
from .phase import IN_PROCESS, WARM, Phase


def _fill(data: dict, p: dict) -> None:
    p = dict(p)
    region_calls = p.pop("region_calls", None)  # joined here, not kept: one entry per call
    data["profile"] = p
    data["guards"].update(guard_cost(p))  # by removal where exact, else the profiler's
    if p.get("guard_ab") is not None:
        data["guards"]["removal"] = p.pop("guard_ab")
    graphs = data["compile"].get("graphs")
    if graphs and region_calls is not None:  # how often each cold frame runs per call
        data["compile"]["graphs"] = dict(
            graphs,
            rows=compile_joins.join_runs(graphs["rows"], region_calls),
            regions_not_in_table=compile_joins.regions_not_in_table(graphs["rows"], region_calls),
        )


def _headline(d: dict) -> str | None:
    """Guard evaluation per call, and how it was measured."""
    g = guard_cost(d)
    guard = g["overhead_s_per_call"]
    how = " (guards removed)" if g["overhead_source"] == GUARDS_BY_REMOVAL else ""
    return f"guards {units.seconds(guard)}/call{how}" if guard is not None else None


PHASES = (
    Phase(
        "profile",
        frozenset({WARM, IN_PROCESS}),
        ("profile",),
        measure="tcdoctor.probes.profile:phase_profile",
        order=110,
        fill=_fill,
        label="profile",
        headline=_headline,
    ),
)
