"""`tcdoctor diff`: what changed between two reports: breaks fixed/introduced, key figure deltas."""

from __future__ import annotations

from typing import Any, Callable

from tabulate import tabulate

from .. import units
from .model import Report
from .sections import GraphBreak

FIGURES: list[tuple[str, Callable[[Report], Any], Callable[[Any], str]]] = [
    ("graph breaks", lambda r: r.graph_breaks.count, units.count),
    ("graphs", lambda r: r.graphs.count, units.count),
    ("recompiles", lambda r: r.recompiles.count, units.count),
    ("guards", lambda r: r.guards.count, units.count),
    ("speedup", lambda r: r.runtime.speedup, units.ratio),
    ("eager median", lambda r: r.runtime.eager.median_s, units.seconds),
    ("compiled median", lambda r: r.runtime.compiled.median_s, units.seconds),
    ("compile cold", lambda r: r.compile.cold_s, units.seconds),
    ("compile warm", lambda r: r.compile.warm_s, units.seconds),
    ("compiled peak memory", lambda r: r.memory.compiled_peak_bytes, units.nbytes),
    ("numerics passed", lambda r: r.numerics.passed, units.count),
    ("verdict", lambda r: r.verdict.decision, units.count),
]


def _key(f: GraphBreak) -> tuple:
    return (f.reason, f.file, f.line)


def diff(a: Report, b: Report) -> dict:
    ka = {_key(f): f for f in a.graph_breaks.unique}
    kb = {_key(f): f for f in b.graph_breaks.unique}
    rows = []
    for label, figure, show in FIGURES:
        va, vb = figure(a), figure(b)
        delta = ""
        if (
            isinstance(va, (int, float))
            and isinstance(vb, (int, float))
            and not isinstance(va, bool)
        ):
            d = vb - va
            delta = (
                ("+" if d >= 0 else "-") + show(abs(d)) + (f" ({(vb / va - 1):+.0%})" if va else "")
            )
        rows.append({"figure": label, "before": show(va), "after": show(vb), "delta": delta})
    return {
        "fixed": [ka[k] for k in ka if k not in kb],
        "introduced": [kb[k] for k in kb if k not in ka],
        "figures": rows,
        "torch": (a.environment.get("torch"), b.environment.get("torch")),
    }


def render_diff(a: Report, b: Report) -> str:
    d = diff(a, b)
    lines = [
        f"before: {a.target} (torch {d['torch'][0]})",
        f"after:  {b.target} (torch {d['torch'][1]})",
        "",
    ]
    lines.append(
        tabulate(
            [[r["figure"], r["before"], r["after"], r["delta"]] for r in d["figures"]],
            headers=["", "before", "after", "delta"],
        )
    )
    for title, items in (
        ("Graph breaks fixed", d["fixed"]),
        ("Graph breaks introduced", d["introduced"]),
    ):
        lines += ["", f"{title}: {len(items)}"]
        lines += [f"  {f.file}:{f.line} {f.reason}" for f in items]
    return "\n".join(lines)
