"""Each graph break's cost and what fixing it can gain, joined from the profile's per-region times
(probes/break_cost.py) and the compile phase's break sites, after every phase.

A break's cost is the time its region spends outside its compiled graph; the bound on what fixing
it gains subtracts the eager aten work that would still run (see probes/break_cost.py for the
event method and its pitfalls). A fix tried in a fresh process replaces the bound with what it
measured, and ranks the findings by gain (verdict/tried.py: `rank_key`, once every gain is known).
"""

from __future__ import annotations

from .sections import GraphBreak, Profile, Runtime

METHOD = (
    "median over profiled steady-state calls of the time inside the region of the frame the break ended, "
    "outside its compiled graph and the regions nested in it (the op run eagerly, the Python around it, the "
    "resume frame's guard check); a skipped frame costs the call's time outside every region; regions are "
    "matched to breaks by the compile id Dynamo was compiling when it logged the break; share = that time / "
    "the profiled call's median (both under the profiler), and cost per call = share × the timing phase's "
    "compiled median (the profiler slows eager ops more than compiled graphs, so shares lean high)"
)


BOUND_METHOD = (
    "a bound, not a measurement: the break's cost minus the top-level aten ops run eagerly in that time "
    "(work that still runs once the break is gone); what remains is the Python around the break, the "
    "resume frame's guard check and region entry and exit. Fusion across the break is not counted"
)


def attach(data: dict) -> None:
    """Put cost_s_per_call / cost_fraction on each graph-break finding (in the report, after every
    phase). The findings become GraphBreak records in `data` (Report.from_dict keeps a record as it
    is, so the report's JSON is the one the dicts gave); the profile is read typed (Profile), the
    break sites are still the compile phase's dicts."""
    breaks = data.get("graph_breaks") or {}
    if not breaks.get("unique"):
        return
    findings = breaks["unique"] = [GraphBreak.from_dict(f) for f in breaks["unique"]]
    prof = Profile.from_dict(data.get("profile"))
    sites = (data.get("compile") or {}).get("break_sites") or []
    median = Runtime.from_dict(data.get("runtime")).compiled.median_s
    profiled = prof.profiled_call_s
    why = None
    if not prof.region_self_s and prof.outside_regions_s is None:
        why = "the profile phase did not run"
    elif not prof.graph_calls_marked:
        if ((data.get("environment") or {}).get("backend") or "inductor") == "inductor":
            why = "no compiled graph call was marked in the profiled calls, so a break's own time cannot be told apart"
        else:
            why = "this backend does not mark its graph calls in the profiler (Inductor does), so a break's own time cannot be told apart"
    for f in findings:
        if why and not f.frame_skipped:
            f.cost_not_measured = why
            continue
        if f.frame_skipped:
            cost = prof.outside_regions_s
            eager = prof.outside_regions_eager_s
            if cost is None:  # a skipped frame's cost is the call's time outside every region
                f.cost_not_measured = why or "the profile did not time the call outside regions"
                continue
        else:
            where = (f.site.file, f.site.line) if f.site else (None, None)
            ids = {s["compile_id"] for s in sites if (s.get("file"), s.get("line")) == where}
            own = prof.region_self_s or {}
            costs = [own[i] for i in ids if i in own]
            cost = sum(costs) if costs else None
            eager = sum((prof.region_eager_s or {}).get(i, 0.0) for i in ids)
            if cost is None:
                f.cost_not_measured = "no compiled region of the timed model ends at this break (its frame compiled differently)"
                continue
        share = min(1.0, cost / profiled) if cost is not None and profiled else None
        f.cost_fraction = share
        f.cost_s_per_call = share * median if share is not None and median else None
        f.profiled_cost_s_per_call = cost
        f.cost_method = METHOD
        if share is not None and eager is not None:
            bound = min(1.0, max(0.0, cost - eager) / profiled)
            f.gain_fraction = bound
            f.gain_s_per_call = bound * median if median else None
            f.gain_source = "bound"
            f.gain_method = BOUND_METHOD


def rank_key(gain_s: float | None, cost_s: float | None) -> tuple[float, float]:
    """Findings are ordered by what fixing them gains (measured or bounded), then by their cost."""
    return (-(gain_s if gain_s is not None else -1.0), -(cost_s if cost_s is not None else -1.0))
