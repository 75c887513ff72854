"""The compile phases: the cold first call (probes/first_call.py, with its graphs, breaks and
guards), the cold compile's saved artifacts (experiments/artifacts.py, for the portable-cache
remedy) and the warm process's first call against the same inductor cache."""

from __future__ import annotations

from ... import units
from .. import compile_joins, counts
from ..sections import CompileTime
from .phase import COLD, MAIN, WARM, Phase, plural


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
    peak, method = c.pop("first_call_peak_bytes", None), c.pop("first_call_peak_method", None)
    data["compile"].update(c)
    if peak is not None:  # the compiled side's first call (probes/memory.first_call_peak)
        data["memory"]["compiled_first_call_peak_bytes"] = peak
        data["memory"]["first_call_method"] = method
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


def _warm_not_measured(data: dict, sections: tuple[str, ...], why: str) -> None:
    if data["compile"].get("warm_s") is None:
        data["compile"]["warm_not_measured"] = why


def _headline(d: dict) -> str | None:
    """'first call 1.2 s, 87 guards'."""
    first, guards = d.get("first_call_s"), units.get(d, "guards.count")
    if first is None:
        return None
    return f"first call {units.seconds(first)}" + (
        f", {plural(guards, 'guard')}" if guards is not None else ""
    )


def _warm_headline(d: dict) -> str | None:
    return units.seconds(d["warm_s"]) if d.get("warm_s") is not None else None


PHASES = (
    Phase(
        "compile",
        MAIN,
        ("compile", "guards"),
        measure="tcdoctor.probes.compile_phases:phase_compile",
        order=40,
        fill=_fill_compile,
        record=CompileTime,
        label="compile (cold)",
        headline=_headline,
    ),
    Phase(
        "cache_artifacts",
        frozenset({COLD}),
        (),
        measure="tcdoctor.experiments.artifacts:phase_cache_artifacts",
        order=50,
        fill=_fill_cache_artifacts,
    ),
    Phase(
        "compile_warm",
        frozenset({WARM}),
        ("compile",),
        measure="tcdoctor.probes.compile_phases:phase_compile_warm",
        order=60,
        fill=_fill_compile_warm,
        not_measured=_warm_not_measured,
        label="warm compile",
        headline=_warm_headline,
    ),
)
