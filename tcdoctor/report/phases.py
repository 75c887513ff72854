"""The phase registry: every measurement of an analysis, where it runs, and what it fills.

One table, read by both sides: the child (`run/runner.py`) runs the phases of its process in
this order, calling the runner method registered for each name; the parent (`report.assemble`)
loops over the same table to put each finished phase's result into its report sections, and
to say "not measured (why)" in those sections when it did not finish.

Processes: "cold" is the first child (empty inductor cache), "warm" a second fresh child on the
same cache, "in_process" the Python API's single process. Adding a probe = a probe module + an
entry here (with its `fill`) + a `@measures(name)` runner method + its section's `Record` in
results.py + renderer support. `fill` works on the assembled dict (the children's wire format);
`Report.from_dict` types the sections after every fill.

Torch-free: `tcdoctor report` re-renders saved JSON without importing torch.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from . import attribution, break_gain, compile_joins, counts, runtime_processes
from .sections import GUARDS_BY_REMOVAL, guard_cost

Fill = Callable[[dict, dict], None]


def _set(*sections: str) -> Fill:
    def fill(data: dict, result: dict) -> None:
        for sec in sections:
            data[sec] = result if len(sections) == 1 else result[sec]

    return fill


def _fill_compile(data: dict, c: dict) -> None:
    c = dict(c)
    data["guards"].update(c.pop("guards"))
    counted = c.pop(
        "counted", None
    )  # the user's own compile's graphs and breaks (report/counts.py)
    if counted:
        merged = counts.use_compile_counts(
            {k: data[k] for k in ("graphs", "graph_breaks") if "not_measured" not in data[k]},
            counted,
        )
        data["graphs"], data["graph_breaks"] = merged["graphs"], merged["graph_breaks"]
    data["compile"].update(c)
    data["memory"]["compile_peak_bytes"] = c.get("peak_rss_delta_bytes")
    data["memory"]["compile_peak_method"] = (
        "growth of process RSS during the first (compiling) call, sampled every 2 ms"
    )


def _fill_compile_warm(data: dict, w: dict) -> None:
    data["compile"]["warm_s"] = w["warm_s"]
    data["compile"]["warm_phases"] = w["phases"]
    data["compile"]["warm_cache"] = w["cache"]
    if w.get("state_check") is not None:  # the warm child's own copy-fidelity check (pristine.py)
        data["compile"]["warm_state_check"] = w["state_check"]
    data["compile"]["warm_method"] = (
        "first call in a fresh process against the same TORCHINDUCTOR_CACHE_DIR "
        "(what a restarted server pays)"
    )
    graphs = data["compile"].get("graphs")
    if graphs and w.get("graphs") is not None:  # each cold frame's seconds in the warm process
        data["compile"]["graphs"] = dict(
            graphs, rows=compile_joins.join_warm_rows(graphs["rows"], w["graphs"])
        )


def _fill_cache_artifacts(data: dict, a: dict) -> None:
    """The cold compile's saved artifacts, which the portable-cache remedy loads."""
    data["compile"].setdefault("remedies", {})["artifacts"] = a


def _fill_memory(data: dict, m: dict) -> None:
    data["memory"].update(m)


def _fill_profile(data: dict, p: dict) -> None:
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


def _fill_runtime(data: dict, r: dict) -> None:
    """The cold process's timing: the runtime section's per-process figures (eager, compiled), and
    the first of the processes `derive` joins into the headline speedup."""
    data["runtime"] = dict(r)
    _fill_timed("runtime")(data, r)


def _fill_timed(phase: str) -> Fill:
    """Keep a process's timing for `derive` (report/runtime_processes.py joins them)."""

    def fill(data: dict, r: dict) -> None:
        data.setdefault("_timed", {})[phase] = r

    return fill


def _fill_recompiles(data: dict, r: dict) -> None:
    # the 'automatic' shape row it also measured goes to the strategies section (run/assemble.py)
    data["recompiles"] = {k: v for k, v in r.items() if k != "automatic_row"}
    data["compile"]["recompile_time_s"] = r["recompile_time_s"]


def _fill_memory_graphs(data: dict, a: dict) -> None:
    data["memory"]["attribution"] = a  # where the growth is (report/attribution.py)


def _memory_graphs_not_measured(data: dict, sections: tuple[str, ...], why: str) -> None:
    data["memory"].setdefault("attribution", {"not_measured": why})


def _fill_drift(data: dict, d: dict) -> None:
    data["numerics"]["drift"] = d  # where the numbers drift (report/attribution.py)


def _drift_not_measured(data: dict, sections: tuple[str, ...], why: str) -> None:
    data["numerics"].setdefault("drift", {"not_measured": why})


def _not_measured(data: dict, sections: tuple[str, ...], why: str) -> None:
    for sec in sections:
        data[sec].setdefault("not_measured", why)


def _warm_not_measured(data: dict, sections: tuple[str, ...], why: str) -> None:
    if data["compile"].get("warm_s") is None:
        data["compile"]["warm_not_measured"] = why


@dataclasses.dataclass(frozen=True)
class Phase:
    name: str
    processes: frozenset[str]
    sections: tuple[str, ...]  # report sections it fills
    fill: Fill
    not_measured: Callable[[dict, tuple[str, ...], str], None] = _not_measured


COLD, WARM, IN_PROCESS, TIMING = "cold", "warm", "in_process", "timing"
_MAIN = frozenset({COLD, IN_PROCESS})

# In the in-process order; the cold child keeps this order too (memory/profile run in the warm child).
PHASES: tuple[Phase, ...] = (
    Phase("environment", _MAIN, (), _set("environment")),
    Phase("eager", _MAIN, (), lambda data, result: None),
    Phase("graph_breaks", _MAIN, ("graphs", "graph_breaks"), _set("graphs", "graph_breaks")),
    Phase("compile", _MAIN, ("compile", "guards"), _fill_compile),
    Phase("cache_artifacts", frozenset({COLD}), (), _fill_cache_artifacts),
    Phase("compile_warm", frozenset({WARM}), ("compile",), _fill_compile_warm, _warm_not_measured),
    Phase("runtime", _MAIN, ("runtime",), _fill_runtime),
    # the same timing in the warm process, and in timing-only processes up to --processes (run/launcher.py)
    Phase("runtime_warm", frozenset({WARM}), (), _fill_timed("runtime_warm")),
    Phase("runtime_extra", frozenset({TIMING}), (), _fill_timed("runtime_extra")),
    Phase("memory", frozenset({WARM, IN_PROCESS}), ("memory",), _fill_memory),
    Phase(
        "memory_graphs",
        frozenset({WARM, IN_PROCESS}),
        (),
        _fill_memory_graphs,
        _memory_graphs_not_measured,
    ),
    Phase("profile", frozenset({WARM, IN_PROCESS}), ("profile",), _fill_profile),
    Phase("numerics", _MAIN, ("numerics",), _set("numerics")),
    Phase("recompiles", _MAIN, ("recompiles",), _fill_recompiles),
    Phase(
        "drift", _MAIN, (), _fill_drift, _drift_not_measured
    ),  # compiles parts: after the variants
)
BY_NAME = {p.name: p for p in PHASES}
# Every report section some phase fills, in registry order (report.assemble starts each empty).
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(s for p in PHASES for s in p.sections))


def order(process: str) -> tuple[str, ...]:
    """The phases a process runs, in order."""
    return tuple(p.name for p in PHASES if process in p.processes)


def derive(data: dict) -> None:
    """Figures computed from several phases' results, after every fill."""
    results = data.pop("_timed", {})
    timed = runtime_processes.timed(results)
    if timed and data["runtime"].get("speedup") is not None:
        data["runtime"].update(
            runtime_processes.combine(timed, runtime_processes.sequence(results))
        )
    # Guards.overhead_fraction is taken of the compiled median the timing phase measured, or, for
    # a cost by removal, of the with-guards median of the same A/B samples (sections.guard_cost).
    median = (data["runtime"].get("compiled") or {}).get("median_s")
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
            (data["runtime"].get("compiled") or {}).get("median_s"),
        )
        data["compile"]["graphs"] = dict(graphs, rows=rows, time_scale=scale)
    break_gain.attach(data)
    attribution.attach_memory(data)
