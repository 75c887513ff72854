"""One recommendation per strategy family measured (mode, training way, dynamic shapes, regions),
each with the figures behind it; the decision reads the same rows (figures.other_ways)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .. import units
from ..report.sections import (
    RegionRow,
    StrategyRow,
)
from ..thresholds import Rules

if TYPE_CHECKING:
    from ..report.model import Report


def changing_dims(report: Report) -> list[str]:
    """Dimensions named by the size-mismatch guards that recompiled (e.g. "args[0] dim 1")."""
    dims = []
    for ev in report.recompiles.events or []:
        m = re.search(r"tensor '([^']+)' size mismatch at index (\d+)", ev.reason or "")
        if m and f"{m.group(1)} dim {m.group(2)}" not in dims:
            dims.append(f"{m.group(1)} dim {m.group(2)}")
    return dims


def _recommend_mode(rows: list[StrategyRow], rules: Rules) -> dict:
    good = [
        r
        for r in rows
        if r.significantly_faster(rules) and r.numerics_passed is not False and not r.note
    ]
    best = max(good, key=lambda r: r.speedup) if good else None
    if not best:
        return {"choice": None, "text": "no mode is measurably faster than eager here"}
    return {
        "choice": best.name,
        "text": f"mode={best.name!r}: {units.ratio(best.speedup)} vs eager, "
        f"first call {units.seconds(best.first_call_s)}",
    }


TRAINING_WAYS = {
    "model": "compile the model only",
    "step": "compile the whole training step",
    "optimizer": "compile only optimizer.step",
}


def _recommend_training(rows: list[StrategyRow], rules: Rules) -> dict:
    compiled = [r for r in rows if r.name != "eager"]
    good = [r for r in compiled if r.significantly_faster(rules) and r.numerics_passed is not False]
    best = max(good, key=lambda r: r.speedup) if good else None
    steps = {r.name: r.steps_to_repay for r in compiled}
    names = TRAINING_WAYS
    drifting = [r for r in compiled if r.significantly_faster(rules) and r.numerics_passed is False]
    if best and steps.get(best.name):
        text = (
            f"{names[best.name]}: {units.seconds(best.median_s)}/step vs "
            f"{units.seconds(best.eager_median_s)} eager ({units.ratio(best.speedup)}), "
            f"repaid after {steps[best.name]:,} steps"
        )
    elif best:
        text = (
            f"{names[best.name]}: {units.ratio(best.speedup, word='faster')}, "
            "but it never repays its compile time"
        )
    elif drifting:
        text = "keep the step eager until the numerics are resolved: " + "; ".join(
            f"{names[r.name]} is {units.ratio(r.speedup, word='faster')} but fails the "
            "numerics check"
            + (f" (max abs error {units.sci(r.max_abs_err)})" if r.max_abs_err is not None else "")
            for r in drifting
        )
    else:
        missing = [TRAINING_WAYS[w] for w in TRAINING_WAYS if w not in {r.name for r in compiled}]
        measured = ", ".join(TRAINING_WAYS[r.name] for r in compiled if r.name in TRAINING_WAYS)
        text = (
            "keep the step eager: no way of compiling it is measurably faster"
            if not missing
            else f"keep the step eager for now: no measured way ({measured}) is measurably faster; "
            f"not measured: {', '.join(missing)}"
        )
    return {"choice": best.name if best else "eager", "break_even_steps": steps, "text": text}


def horizon_cost(row: StrategyRow, horizon: int) -> float:
    """A shape setting's compile seconds plus its calls over the horizon (the shapes' compiled
    medians averaged: each shape fed equally often). Its compile seconds as a fresh container pays
    them (`fresh_compile_s`), as the main analysis's 'automatic' row does: a child that started
    from the machine's probed folder skipped Inductor's CPU ISA probe builds."""
    return row.fresh_compile_s + horizon * sum(s["median_s"] for s in row.shapes) / len(row.shapes)


def trade(row: StrategyRow, base: StrategyRow, rules: Rules) -> tuple[bool, str]:
    """Whether `row` beats `base` over the horizon, compile and calls together, by more than the
    spread of compile seconds between processes (each row compiled in its own process), and the
    figures: a setting that compiles less but runs every call slower is a trade, judged as one."""
    horizon = int(rules.expected_calls)
    cost, base_cost = horizon_cost(row, horizon), horizon_cost(base, horizon)
    margin = rules.compile_spread * max(row.fresh_compile_s, base.fresh_compile_s)
    per_call = ", ".join(units.ratio(s.get("speedup"), s.get("speedup_ci")) for s in row.shapes)
    base_call = ", ".join(units.ratio(s.get("speedup")) for s in base.shapes)
    text = (
        f"compile + {horizon:,} calls {units.seconds(cost)} vs {units.seconds(base_cost)} "
        f"('{base.name}'; a win must exceed {units.seconds(margin)}, "
        f"{units.percent(rules.compile_spread)} of the larger compile, the spread of compile "
        f"seconds between processes); per call vs eager, each shape: {per_call} "
        f"('{base.name}': {base_call})"
    )
    return cost < base_cost - margin, text


def main_shape_row(rows: list[StrategyRow]) -> StrategyRow | None:
    """The shape setting the main analysis ran: the row taken from it, else PyTorch's default."""
    return next((r for r in rows if r.source == "main analysis"), None) or next(
        (r for r in rows if r.name == "automatic"), None
    )


def _recommend_dynamic(rows: list[StrategyRow], rules: Rules, report: Report) -> dict:
    horizon = rules.expected_calls
    usable = [r for r in rows if not r.limit_hit] or rows
    cost = {r.name: horizon_cost(r, int(horizon)) for r in usable}
    best = min(usable, key=lambda r: cost[r.name])
    base = main_shape_row(usable)
    if base is not None and best is not base and not trade(best, base, rules)[0]:
        best = base  # not a win beyond the spread: the setting the headline measured stays
    dims = changing_dims(report) or [d for r in rows for d in r.changing_dims or []][:1]
    dim_txt = (
        f"; the dimension that changes: {', '.join(dims)} "
        "(torch._dynamo.mark_dynamic on it before the first call)"
        if dims
        else ""
    )
    static = next((r for r in rows if r.name == "static"), None)
    static_txt = (
        f" (static: {static.compiles} compiles, {units.seconds(static.compile_s)})"
        if static and static is not best
        else ""
    )
    speeds = ", ".join(units.ratio(s.get("speedup")) for s in best.shapes)
    return {
        "choice": best.name,
        "dims": dims,
        "costs_s": cost,
        "text": f"{best.name} shapes: {best.compiles} compile(s), "
        f"{units.seconds(best.compile_s)} compiling{static_txt}, "
        f"per call {speeds} vs eager on the shapes, "
        f"lowest compile + run time over {horizon:,} calls beyond the spread of compile times{dim_txt}",
    }


def _recommend_regions(
    regions: list[RegionRow], rules: Rules, eager_forward_s: float | None
) -> dict:
    pick = [r for r in regions if r.fullgraph and r.significantly_faster(rules)]
    gain = sum(r.gain_s_per_forward for r in pick)
    frac = (
        f" ({units.percent(gain / eager_forward_s)} of an eager forward)"
        if eager_forward_s and pick
        else ""
    )
    broken = [r.name for r in regions if r.fullgraph is False]
    text = (
        f"compile {', '.join(r.name for r in pick)}: expected saving "
        f"{units.seconds(gain)} per forward{frac}"
        if pick
        else "no submodule is both fullgraph-clean and measurably faster compiled"
    )
    text += f"; leave {', '.join(broken)} eager (graph breaks)" if broken else ""
    return {"choice": [r.name for r in pick], "expected_gain_s_per_forward": gain, "text": text}


def recommend(report: Report, rules: Rules) -> dict:
    """One recommendation per strategy family that was measured, each with the figures behind it."""
    st = report.strategies
    rec: dict = {}
    modes = [r for r in st.modes or [] if r.speedup is not None]
    if modes:
        rec["mode"] = _recommend_mode(modes, rules)
    train = [r for r in st.training or [] if r.median_s is not None]
    if train:
        rec["training"] = _recommend_training(train, rules)
    dyn = [r for r in st.dynamic or [] if r.shapes]
    if dyn:
        rec["dynamic"] = _recommend_dynamic(dyn, rules, report)
    if st.regions and st.regions.regions:
        rec["regions"] = _recommend_regions(
            st.regions.regions, rules, report.runtime.eager.median_s
        )
    return rec
