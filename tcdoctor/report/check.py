"""Thresholds for `tcdoctor check`: each is a pass/fail with the figure it was judged on."""

from __future__ import annotations

from typing import Any

from .. import units
from .model import Report

CHECK_KEYS = (
    "max_graph_breaks",
    "max_recompiles",
    "min_speedup",
    "max_compile_seconds",
    "max_memory_ratio",
    "require_numerics",
    "require_verdict",
)
_ORDER = {"dont-compile": 0, "compile-after-fixes": 1, "compile": 2}


def _res(name: str, passed: bool, detail: str) -> dict:
    return {"name": name, "passed": bool(passed), "detail": detail}


def run_checks(
    report: Report,
    max_graph_breaks: int | None = None,
    max_recompiles: int | None = None,
    min_speedup: float | None = None,
    max_compile_seconds: float | None = None,
    max_memory_ratio: float | None = None,
    require_numerics: bool = False,
    require_verdict: str | None = None,
    compile_remedies: bool = False,
) -> list[dict]:
    """An unmeasured figure fails its check: a gate must not pass on missing evidence.

    `compile_remedies`: --max-compile-seconds judges the best measured way to start (the cold
    whole model, or a remedy tried in a fresh process) and names the one it used."""
    out: list[dict] = []

    def limit(name: str, value: Any, bound: Any, le: bool, show=str) -> None:
        if bound is None:
            return
        if value is None:
            out.append(_res(name, False, f"not measured, limit {bound}"))
        else:
            ok = value <= bound if le else value >= bound
            out.append(_res(name, ok, f"{show(value)} ({'≤' if le else '≥'} {bound} required)"))

    limit("graph breaks", report.graph_breaks.count, max_graph_breaks, True)
    limit("recompiles", report.recompiles.count, max_recompiles, True)
    limit(
        "speedup (95% CI lower bound)",
        report.runtime.ci_low,
        min_speedup,
        False,
        lambda v: f"{v:.3f}×",
    )
    if compile_remedies and max_compile_seconds is not None:
        out.append(_best_start(report, max_compile_seconds))
    else:
        limit(
            "cold compile seconds", report.compile.cold_s, max_compile_seconds, True, units.seconds
        )
    limit(
        "memory ratio compiled/eager",
        report.memory.ratio,
        max_memory_ratio,
        True,
        lambda v: f"{v:.2f}",
    )
    if require_numerics:
        p = report.numerics.passed
        detail = units.numerics_status(p)
        if p is False:
            detail += f" (max abs err {units.sci(report.numerics.max_abs_err)})"
        elif p is None and report.numerics.not_measured:
            detail += f" ({report.numerics.not_measured})"
        out.append(_res("numerics", p is True, detail))
    if require_verdict:
        d = report.verdict.decision
        out.append(
            _res(
                "verdict",
                d is not None and _ORDER.get(d, -1) >= _ORDER[require_verdict],
                f"{d} (at least {require_verdict} required)",
            )
        )
    if report.errors:
        out.append(
            _res(
                "analysis complete",
                False,
                "; ".join(f"{e['phase']}: {e['message']}" for e in report.errors),
            )
        )
    return out


def _best_start(report: Report, bound: float) -> dict:
    """The first call of the best measured way to start a fresh machine: the whole model cold or
    a remedy (its artifacts' load included), numerics not failing; says which it used."""
    rem = report.compile.remedies
    rows = [r for r in (rem.measured if rem else []) if r.numerics_passed is not False]
    ways = [("the whole model, cold", report.compile.cold_s)] + [
        (r.title, r.startup_s) for r in rows
    ]
    ways = [(label, s) for label, s in ways if s is not None]
    name = "first call, best measured remedy"
    if not ways:
        return _res(name, False, f"not measured, limit {bound}")
    label, value = min(ways, key=lambda w: w[1])
    why = (
        f"; no remedy measured ({'; '.join(str(n.get('why')) for n in rem.not_tried[:2])})"
        if rem and not rows and rem.not_tried
        else ("; no remedy measured" if not rows else "")
    )
    return _res(
        name,
        value <= bound,
        f"{units.seconds(value)} with {label} (≤ {bound} required){why}",
    )
