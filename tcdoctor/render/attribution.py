"""The words of the memory attribution and the drift localisation (report/attribution.py), one home
for every renderer: a one-line summary (the key-figure row), and the lines or rows under it."""

from __future__ import annotations

import os
from typing import Any

from .. import units
from ..report.attribution import DriftOrigin, MemoryAttribution

MEMORY_TITLE = "Memory growth by compiled graph"
MEMORY_HEADERS = ["graph", "starts at", "bytes at the compiled peak", "own peak"]
DRIFT_TITLE = "Where the numbers drift"
DRIFT_HEADERS = [
    "module",
    "class",
    "defined at",
    "error / tol",
    "compiled err vs fp64",
    "eager err vs fp64",
]


def _where(file: str | None, line: int | None, basename: bool) -> str:
    if not file:
        return units.NA
    name = os.path.basename(file) if basename else file
    return f"{name}:{line}" if line is not None else name


def memory_summary(a: MemoryAttribution | None) -> str:
    """One line: no growth, where the growth is, or why it was not measured."""
    if a is None:
        return "not measured (the memory phase did not run)"
    if a.not_measured and a.grew is None:
        return f"not measured ({a.not_measured})"
    if not a.grew:
        g = a.growth_bytes
        if g == 0:
            return "none (compiled peaks at or below eager's)"
        return f"none above the threshold ({units.nbytes(g)} per call)"
    if a.not_measured:
        return f"{units.nbytes(a.growth_bytes)} per call; by graph: not measured ({a.not_measured})"
    big = a.largest
    if not big:
        return f"{units.nbytes(a.growth_bytes)} per call; no compiled graph holds it"
    return (
        f"{units.nbytes(a.growth_bytes)} per call; largest: graph {big.get('compile_id')} "
        f"({big.get('function') or '?'}, {_where(big.get('file'), big.get('line'), True)}) "
        f"{units.nbytes(big.get('bytes'))}"
    )


def memory_rows(a: MemoryAttribution | None, basename: bool = False) -> list[list[str]]:
    if a is None or not a.grew or not a.graphs:
        return []
    return [
        [
            f"{g.get('compile_id')} {g.get('function') or ''}".strip(),
            _where(g.get("file"), g.get("line"), basename),
            units.nbytes(g.get("bytes")),
            units.nbytes(g.get("own_peak_bytes")),
        ]
        for g in a.graphs
    ]


def memory_notes(a: MemoryAttribution | None, method: bool = True) -> list[str]:
    """Compile-time working set vs steady-state growth, what is outside every graph, the method."""
    if a is None or not a.grew or a.not_measured:
        return []
    out = [
        f"compile-time working set (RSS growth while compiling): "
        f"{units.nbytes(a.compile_working_set_bytes)}; steady-state growth per call: "
        f"{units.nbytes(a.growth_bytes)}",
    ]
    if a.outside_regions_bytes:
        out.append(
            f"allocated outside every compiled region: {units.nbytes(a.outside_regions_bytes)}"
        )
    if method:
        out.append(f"method: {a.method}; threshold: {a.threshold}")
    return out


def drift_summary(d: DriftOrigin | None) -> str:
    """One line: not checked (why), the module named, or none found."""
    if d is None:
        return "not measured (the numerics phase did not run)"
    if d.not_measured:
        return f"not measured ({d.not_measured})"
    if not d.checked:
        return f"not localised: {d.reason}"
    o = d.origin
    if not o:
        return f"no single module drifts on exact inputs ({d.modules_compared} compared)"
    return (
        f"origin {o.get('name')} ({o.get('class')}): compiled err vs fp64 "
        f"{units.sci(o.get('err_vs_fp64'))}, eager {units.sci(o.get('eager_err_vs_fp64'))}"
    )


def drift_rows(d: DriftOrigin | None, basename: bool = False) -> list[list[str]]:
    """The modules descended through, the origin last."""
    if d is None or not d.checked or not d.path:
        return []
    return [
        [
            p.get("name") or "(whole model)",
            p.get("class") or "",
            _where(p.get("class_file"), p.get("class_line"), basename),
            f"{p.get('ratio', 0.0):.3g}",
            units.sci(p.get("err_vs_fp64")),
            units.sci(p.get("eager_err_vs_fp64")),
        ]
        for p in d.path
    ]


def drift_notes(d: DriftOrigin | None, fixes: Any = (), method: bool = True) -> list[str]:
    """The tried fix 'compile around it' (a row of the report's fixes), PyTorch's bisector, the method."""
    if d is None or not d.checked or not d.origin:
        return []
    out = []
    for row in fixes or ():
        if row.kind == "disable_module":
            summary = row.summary
            out.append(
                f"compile around it, tried: {row.fix}: {row.outcome}"
                + (f" ({summary})" if summary else "")
            )
    b = d.bisector
    if b:
        verdict = b.get("verdict") or f"not run ({b.get('not_run')})"
        out.append(f"CompilerBisector on {d.origin.get('name')} alone: {verdict}")
        if b.get("command"):
            out.append(f"rerun it: {b['command']}")
    elif d.origin.get("name"):
        out.append("CompilerBisector: not run (the analysis ran without it)")
    if method:
        out.append(f"method: {d.method}")
    return out
