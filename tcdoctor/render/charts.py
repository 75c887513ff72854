"""Inline SVG charts: the geometry, computed here as numbers and text; the SVG markup is the
template's (templates/charts.html.j2), so every label goes through Jinja's autoescape.

Each function returns a dict for its macro of the same name, or None when there is nothing to draw.
Coordinates are passed as numbers (the macros write them with one decimal); figures as units.py's
text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import units
from ..report.sections import Timing

if TYPE_CHECKING:
    from ..report.sweep import SweepRow

COLORS = {
    "eager": "#6b7a90",
    "compiled": "#2f7de1",
    "dynamo_s": "#8e6cd8",
    "aot_autograd_s": "#d88a2b",
    "inductor_lowering_s": "#2ba68a",
    "codegen_and_cpp_or_triton_s": "#d4504c",
    "outside_compiler_s": "#a0a7b4",
}
PHASE_LABELS = {
    "dynamo_s": "Dynamo tracing",
    "aot_autograd_s": "AOTAutograd",
    "inductor_lowering_s": "Inductor lowering",
    "codegen_and_cpp_or_triton_s": "codegen + C++/Triton compile",
    "outside_compiler_s": "first run + other",
}


def boxplot(series: dict[str, Timing | None], width: int = 640) -> dict[str, Any] | None:
    """Horizontal p10–p90 whiskers, IQR box and median per series (summaries from stats.summarize)."""
    rows = [(k, s) for k, s in series.items() if s and s.median_s is not None]
    if not rows:
        return None
    hi = max(s.p90_s for _, s in rows) * 1.15
    left, right, rh = 90, width - 20, 34
    x = lambda v: left + (right - left) * v / hi  # noqa: E731
    h = rh * len(rows) + 30
    return {
        "width": width,
        "height": h,
        "rows": [
            {
                "name": name,
                "y": 10 + i * rh,
                "color": COLORS.get(name, "#555"),
                "p10": x(s.p10_s),
                "p90": x(s.p90_s),
                "p25": x(s.p25_s),
                "box": max(1.0, x(s.p75_s) - x(s.p25_s)),
                "median": x(s.median_s),
                "value_x": min(x(s.p90_s) + 6, right - 60),
                "value": units.seconds(s.median_s),
            }
            for i, (name, s) in enumerate(rows)
        ],
        "ticks": [(x(hi * f), units.seconds(hi * f)) for f in (0, 0.25, 0.5, 0.75, 1.0)],
    }


def stacked_phases(bars: dict[str, dict], width: int = 640) -> dict[str, Any] | None:
    """One stacked bar per cache state (cold, warm) of compile phases plus time outside the compiler."""
    rows = [(k, v) for k, v in bars.items() if v]
    if not rows:
        return None
    totals = {k: sum(v.values()) for k, v in rows}
    hi = max(totals.values()) or 1.0
    left, right, rh = 60, width - 90, 34
    out = []
    for i, (name, phases) in enumerate(rows):
        cur, segments = left, []
        for key, val in phases.items():
            w = (right - left) * val / hi
            segments.append(
                {
                    "x": cur,
                    "width": max(0.0, w),
                    "color": COLORS.get(key, "#999"),
                    "label": PHASE_LABELS.get(key, key),
                    "value": units.seconds(val),
                }
            )
            cur += w
        out.append(
            {
                "name": name,
                "y": 8 + i * rh,
                "segments": segments,
                "total_x": cur + 6,
                "total": units.seconds(totals[name]),
            }
        )
    return {
        "width": width,
        "height": rh * len(rows) + 16,
        "rows": out,
        "legend": [(COLORS[k], label) for k, label in PHASE_LABELS.items()],
    }


def first_calls(bars: list[tuple[str, float]], width: int = 640) -> dict[str, Any] | None:
    """One horizontal bar per way of starting (cold, warm, each remedy): its first call's seconds."""
    rows = [(label, s) for label, s in bars if s is not None and s >= 0]
    if not rows:
        return None
    hi = max(s for _, s in rows) or 1.0
    left, right, rh = 270, width - 70, 28
    out = []
    for i, (label, s) in enumerate(rows):
        w = (right - left) * s / hi
        out.append(
            {
                "label": label,
                "y": 4 + i * rh,
                "width": max(1.0, w),
                "color": COLORS["compiled"] if i else COLORS["codegen_and_cpp_or_triton_s"],
                "value_x": left + w + 6,
                "value": units.seconds(s),
            }
        )
    return {"width": width, "height": rh * len(rows) + 8, "left": left, "rows": out}


def _plot_box(
    width: int, height: int, left: float, right: float, top: float, bottom: float
) -> dict:
    """A line chart's canvas and plot area (the break-even and the latency chart), as the
    templates read them."""
    return {"width": width, "height": height, "left": left, "right": right, "top": top,
            "bottom": bottom}  # fmt: skip


def break_even(
    eager_s: float,
    compiled_s: float,
    compile_costs: dict[str, float],
    calls: int,
    width: int = 640,
    height: int = 220,
) -> dict[str, Any] | None:
    """Cumulative wall time vs calls: eager line against compiled lines offset by compile time."""
    if not eager_s or not compiled_s or calls <= 0:
        return None
    n_max = calls
    ymax = max([eager_s * n_max] + [c + compiled_s * n_max for c in compile_costs.values()]) * 1.05
    left, right, top, bottom = 60, width - 20, 10, height - 40
    X = lambda n: left + (right - left) * n / n_max  # noqa: E731
    Y = lambda t: bottom - (bottom - top) * t / ymax  # noqa: E731
    return {
        **_plot_box(width, height, left, right, top, bottom),
        "eager": (X(0), Y(0), X(n_max), Y(eager_s * n_max)),
        "compiled": [
            {
                "line": (X(0), Y(cost), X(n_max), Y(cost + compiled_s * n_max)),
                "dashed": name == "warm cache",
                "label_y": top + 30 + 14 * i,
                "name": name,
            }
            for i, (name, cost) in enumerate(compile_costs.items())
        ],
        "ticks": [  # per step: the calls axis's tick, then the time axis's
            (
                X(n_max * f),
                units.calls(int(n_max * f)),
                Y(ymax * f / 1.05),
                units.seconds(ymax * f / 1.05),
            )
            for f in (0, 0.5, 1.0)
        ],
        "colors": COLORS,
    }


def modes(rows: list[Any], width: int = 640) -> dict[str, Any] | None:
    """The benchmark article's table as bars, one row per way (eager first): its time per call
    (left panel) and its memory, held after warm-up plus a steady call's peak (right panel, the
    held part darker). Rows without a time are left out; None with fewer than two rows."""
    rows = [r for r in rows if r.median_s is not None]
    if len(rows) < 2:
        return None
    label_w, gap, rh = 130, 30, 26
    panel = (width - label_w - gap - 10) / 2
    t_hi = max(r.median_s for r in rows) or 1.0
    mems = [(r.held_bytes or 0) + (r.peak_bytes or 0) for r in rows]
    m_hi = max(mems) or 1
    out = []
    for i, (r, mem) in enumerate(zip(rows, mems)):
        t_w = panel * 0.75 * r.median_s / t_hi
        held_w = panel * 0.75 * (r.held_bytes or 0) / m_hi
        peak_w = panel * 0.75 * (r.peak_bytes or 0) / m_hi
        measured = r.held_bytes is not None or r.peak_bytes is not None
        out.append(
            {
                "label": r.name or "",
                "y": 24 + i * rh,
                "time_w": max(1.0, t_w),
                "time": units.seconds(r.median_s),
                "held_w": held_w,
                "peak_w": peak_w,
                "memory": units.nbytes(mem) if measured else units.NA,
                "color": COLORS["eager"] if r.baseline else COLORS["compiled"],
            }
        )
    return {
        "width": width,
        "height": 28 + rh * len(rows),
        "time_x": label_w,
        "mem_x": label_w + panel + gap,
        "rows": out,
    }


def speedups(rows: Sequence[SweepRow], width: int = 720) -> dict[str, Any] | None:
    """A sweep's speedups: one dot per timed model, its 95% CI as a whisker, a line at 1× (eager);
    a log scale so 0.5× and 2× sit equally far from 1×. None when nothing was timed."""
    timed = [r for r in rows if r.speedup is not None and r.speedup > 0]
    if not timed:
        return None
    values = [v for r in timed for v in [r.speedup, *(r.speedup_ci or [])] if v and v > 0] + [1.0]
    lo, hi = math.log(min(values) / 1.15), math.log(max(values) * 1.15)
    left, right, rh = 260, width - 90, 24
    x = lambda v: left + (right - left) * (math.log(v) - lo) / (hi - lo)  # noqa: E731
    items = []
    for i, r in enumerate(timed):
        ci = r.speedup_ci if r.speedup_ci and None not in r.speedup_ci else None
        items.append(
            {
                "label": r.target if len(r.target) <= 38 else "…" + r.target[-37:],
                "y": 16 + i * rh,
                "x": round(x(r.speedup), 1),
                "lo": round(x(ci[0]), 1) if ci else None,
                "hi": round(x(ci[1]), 1) if ci else None,
                "text": units.ratio(r.speedup),
                "slow": r.slower_than_eager,
            }
        )
    return {
        "width": width,
        "height": 16 + len(timed) * rh + 20,
        "one": round(x(1.0), 1),
        "left": left,
        "right": right,
        "items": items,
    }


SERIES_COLORS = {
    "eager": COLORS["eager"],
    "compiled": COLORS["compiled"],
    "after warm-up": "#2ba68a",
}
STALL, FALLBACK = "#d4504c", "#e0a526"


def latency(
    series: dict[str, Sequence[float | None]],
    stalls: dict[int, str],
    fallback: Sequence[int],
    width: int = 640,
    height: int = 240,
) -> dict[str, Any] | None:
    """Latency over requests, one line per side (eager, compiled, compiled after the warm-up) on a
    log scale (a compile stall is orders of magnitude above a steady request); each compile stall a
    red dot on the compiled line (`stalls`: request -> its title), each request the eager
    fallback served an orange tick under it. A request not served (None) breaks its line. None
    when no side served a request."""
    values = [v for s in series.values() for v in s if v is not None and v > 0]
    if not values:
        return None
    n = max(len(s) for s in series.values())
    lo, hi = math.log(min(values) / 1.3), math.log(max(values) * 1.3)
    left, right, top, bottom = 70, width - 20, 10, height - 46
    x = lambda i: left + (right - left) * i / max(1, n - 1)  # noqa: E731
    y = lambda v: bottom - (bottom - top) * (math.log(v) - lo) / ((hi - lo) or 1.0)  # noqa: E731
    lines = []
    for name, s in series.items():
        runs, cur = [], []
        for i, v in enumerate(s):
            if v is None or v <= 0:
                runs, cur = (runs + [cur]) if cur else runs, []
            else:
                cur.append(f"{x(i):.1f},{y(v):.1f}")
        runs += [cur] if cur else []
        color = SERIES_COLORS.get(name, "#555")
        lines.append({"name": name, "color": color, "dashed": name == "after warm-up",
                      "runs": [" ".join(r) for r in runs]})  # fmt: skip
    compiled = series.get("compiled") or []
    dots = [
        {"x": x(i), "y": y(compiled[i]), "title": title}
        for i, title in stalls.items()
        if i < len(compiled) and compiled[i]
    ]
    ticks = [math.exp(lo + (hi - lo) * f) for f in (0.1, 0.4, 0.7, 0.95)]
    return {
        **_plot_box(width, height, left, right, top, bottom),
        "lines": lines,
        "stalls": dots,
        "stall_color": STALL,
        "fallback": [
            {"x": x(i), "title": f"request {i}: served by the eager fallback"}
            for i in fallback
            if i < n
        ],  # fmt: skip
        "fallback_color": FALLBACK,
        "y_ticks": [(y(t), units.seconds(t)) for t in ticks],
        "x_ticks": [(x(i), f"request {i}") for i in sorted({0, (n - 1) // 2, n - 1})],
        "legend": [(ln["color"], ln["name"]) for ln in lines]
        + ([(STALL, "compile stall")] if dots else [])
        + ([(FALLBACK, "eager fallback")] if fallback else []),
    }
