"""`tcdoctor diff`: what changed between two reports: breaks fixed/introduced, key figure deltas."""

from __future__ import annotations

from tabulate import tabulate

from . import units
from .report import Report

FIGURES = [
    ("graph breaks", "graph_breaks.count", units.count),
    ("graphs", "graphs.count", units.count),
    ("recompiles", "recompiles.count", units.count),
    ("guards", "guards.count", units.count),
    ("speedup", "runtime.speedup", units.ratio),
    ("eager median", "runtime.eager.median_s", units.seconds),
    ("compiled median", "runtime.compiled.median_s", units.seconds),
    ("compile cold", "compile.cold_s", units.seconds),
    ("compile warm", "compile.warm_s", units.seconds),
    ("compiled peak memory", "memory.compiled_peak_bytes", units.nbytes),
    ("numerics passed", "numerics.passed", units.count),
    ("verdict", "verdict.decision", units.count),
]


def _key(f: dict) -> tuple:
    return (f.get("reason"), f.get("file"), f.get("line"))


def diff(a: Report, b: Report) -> dict:
    ka = {_key(f): f for f in a.get("graph_breaks.unique") or []}
    kb = {_key(f): f for f in b.get("graph_breaks.unique") or []}
    rows = []
    for label, path, show in FIGURES:
        va, vb = a.get(path), b.get(path)
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
        "torch": (a.get("environment.torch"), b.get("environment.torch")),
    }


def render_diff(a: Report, b: Report) -> str:
    d = diff(a, b)
    lines = [
        f"before: {a['target']} (torch {d['torch'][0]})",
        f"after:  {b['target']} (torch {d['torch'][1]})",
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
        lines += [f"  {f['file']}:{f['line']} {f['reason']}" for f in items]
    return "\n".join(lines)
