"""Inline SVG charts. Only numbers and fixed labels go in; any text is escaped anyway."""

from __future__ import annotations

from html import escape

from .. import units
from ..report.sections import Timing

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


def _sec(s: float) -> str:
    return escape(units.seconds(s))


def boxplot(series: dict[str, Timing | None], width: int = 640) -> str:
    """Horizontal p10–p90 whiskers, IQR box and median per series (summaries from stats.summarize)."""
    rows = [(k, s) for k, s in series.items() if s and s.median_s is not None]
    if not rows:
        return ""
    hi = max(s.p90_s for _, s in rows) * 1.15
    left, right, rh = 90, width - 20, 34
    x = lambda v: left + (right - left) * v / hi  # noqa: E731
    h = rh * len(rows) + 30
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {h}" width="100%" style="max-width:{width}px" role="img" aria-label="per-call time distribution">'
    ]
    for i, (name, s) in enumerate(rows):
        y = 10 + i * rh
        c = COLORS.get(name, "#555")
        parts.append(f'<text x="4" y="{y + 17}" class="lbl">{escape(name)}</text>')
        parts.append(
            f'<line x1="{x(s.p10_s):.1f}" x2="{x(s.p90_s):.1f}" y1="{y + 13}" y2="{y + 13}" stroke="{c}" stroke-width="2"/>'
        )
        parts.append(
            f'<rect x="{x(s.p25_s):.1f}" y="{y + 3}" width="{max(1.0, x(s.p75_s) - x(s.p25_s)):.1f}" height="20" fill="{c}" fill-opacity="0.35" stroke="{c}"/>'
        )
        parts.append(
            f'<line x1="{x(s.median_s):.1f}" x2="{x(s.median_s):.1f}" y1="{y + 1}" y2="{y + 25}" stroke="{c}" stroke-width="3"/>'
        )
        parts.append(
            f'<text x="{min(x(s.p90_s) + 6, right - 60):.1f}" y="{y + 17}" class="val">'
            f"{_sec(s.median_s)}</text>"
        )
    for frac in (0, 0.25, 0.5, 0.75, 1.0):
        v = hi * frac
        parts.append(
            f'<text x="{x(v):.1f}" y="{h - 4}" class="tick" text-anchor="middle">{_sec(v)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def stacked_phases(bars: dict[str, dict], width: int = 640) -> str:
    """One stacked bar per cache state (cold, warm) of compile phases plus time outside the compiler."""
    rows = [(k, v) for k, v in bars.items() if v]
    if not rows:
        return ""
    totals = {k: sum(v.values()) for k, v in rows}
    hi = max(totals.values()) or 1.0
    left, right, rh = 60, width - 90, 34
    h = rh * len(rows) + 16
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {h}" width="100%" style="max-width:{width}px" role="img" aria-label="compile time by phase">'
    ]
    for i, (name, phases) in enumerate(rows):
        y = 8 + i * rh
        parts.append(f'<text x="4" y="{y + 17}" class="lbl">{escape(name)}</text>')
        cur = left
        for key, val in phases.items():
            w = (right - left) * val / hi
            parts.append(
                f'<rect x="{cur:.1f}" y="{y + 3}" width="{max(0.0, w):.1f}" height="22" '
                f'fill="{COLORS.get(key, "#999")}">'
                f"<title>{escape(PHASE_LABELS.get(key, key))}: "
                f"{_sec(val)}</title></rect>"
            )
            cur += w
        parts.append(
            f'<text x="{cur + 6:.1f}" y="{y + 18}" class="val">{_sec(totals[name])}</text>'
        )
    parts.append("</svg>")
    legend = "".join(
        f'<span class="key"><i style="background:{COLORS[k]}"></i>{escape(label)}</span>'
        for k, label in PHASE_LABELS.items()
    )
    return "".join(parts) + f'<div class="legend">{legend}</div>'


def first_calls(bars: list[tuple[str, float]], width: int = 640) -> str:
    """One horizontal bar per way of starting (cold, warm, each remedy): its first call's seconds."""
    rows = [(label, s) for label, s in bars if s is not None and s >= 0]
    if not rows:
        return ""
    hi = max(s for _, s in rows) or 1.0
    left, right, rh = 270, width - 70, 28
    h = rh * len(rows) + 8
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {h}" width="100%" style="max-width:{width}px" role="img" aria-label="first call by way of starting">'
    ]
    for i, (label, s) in enumerate(rows):
        y = 4 + i * rh
        w = (right - left) * s / hi
        parts.append(f'<text x="4" y="{y + 16}" class="lbl">{escape(label)}</text>')
        parts.append(
            f'<rect x="{left}" y="{y + 3}" width="{max(1.0, w):.1f}" height="18" '
            f'fill="{COLORS["compiled"] if i else COLORS["codegen_and_cpp_or_triton_s"]}"/>'
        )
        parts.append(f'<text x="{left + w + 6:.1f}" y="{y + 16}" class="val">{_sec(s)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def break_even(
    eager_s: float,
    compiled_s: float,
    compile_costs: dict[str, float],
    calls: int,
    width: int = 640,
    height: int = 220,
) -> str:
    """Cumulative wall time vs calls: eager line against compiled lines offset by compile time."""
    if not eager_s or not compiled_s or calls <= 0:
        return ""
    n_max = calls
    ymax = max([eager_s * n_max] + [c + compiled_s * n_max for c in compile_costs.values()]) * 1.05
    left, right, top, bottom = 60, width - 20, 10, height - 40
    X = lambda n: left + (right - left) * n / n_max  # noqa: E731
    Y = lambda t: bottom - (bottom - top) * t / ymax  # noqa: E731
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" style="max-width:{width}px" role="img" aria-label="break-even">',
        f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#999"/>',
        f'<line x1="{X(0):.1f}" y1="{Y(0):.1f}" x2="{X(n_max):.1f}" y2="{Y(eager_s * n_max):.1f}" stroke="{COLORS["eager"]}" stroke-width="2"/>',
    ]
    dash = {"cold cache": "", "warm cache": ' stroke-dasharray="6 4"'}
    for i, (name, cost) in enumerate(compile_costs.items()):
        parts.append(
            f'<line x1="{X(0):.1f}" y1="{Y(cost):.1f}" x2="{X(n_max):.1f}" y2="{Y(cost + compiled_s * n_max):.1f}" stroke="{COLORS["compiled"]}" stroke-width="2"{dash.get(name, "")}/>'
        )
        parts.append(
            f'<text x="{left + 10}" y="{top + 30 + 14 * i}" class="tick" fill="{COLORS["compiled"]}">compiled, {escape(name)}{" (dashed)" if dash.get(name) else ""}</text>'
        )
    parts.append(f'<text x="{left + 10}" y="{top + 16}" class="tick">eager</text>')
    for frac in (0, 0.5, 1.0):
        parts.append(
            f'<text x="{X(n_max * frac):.1f}" y="{bottom + 16}" class="tick" text-anchor="middle">{escape(units.calls(int(n_max * frac)))}</text>'
        )
        t = ymax * frac / 1.05
        parts.append(
            f'<text x="{left - 4}" y="{Y(t):.1f}" class="tick" text-anchor="end">{_sec(t)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
