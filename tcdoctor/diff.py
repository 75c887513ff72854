"""`tcdoctor diff`: what changed between two reports: breaks fixed/introduced, key figure deltas."""
from __future__ import annotations

from tabulate import tabulate

from .render import fmt
from .report import Report

FIGURES = [
    ("graph breaks", "graph_breaks.count", fmt.count),
    ("graphs", "graphs.count", fmt.count),
    ("recompiles", "recompiles.count", fmt.count),
    ("guards", "guards.count", fmt.count),
    ("speedup", "runtime.speedup", lambda x: fmt.ratio(x)),
    ("eager median", "runtime.eager.median_s", fmt.seconds),
    ("compiled median", "runtime.compiled.median_s", fmt.seconds),
    ("compile cold", "compile.cold_s", fmt.seconds),
    ("compile warm", "compile.warm_s", fmt.seconds),
    ("compiled peak memory", "memory.compiled_peak_bytes", fmt.nbytes),
    ("numerics passed", "numerics.passed", fmt.count),
    ("verdict", "verdict.decision", fmt.count),
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
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and not isinstance(va, bool):
            d = vb - va
            delta = ("+" if d >= 0 else "-") + show(abs(d)) + (f" ({(vb / va - 1):+.0%})" if va else "")
        rows.append({"figure": label, "before": show(va), "after": show(vb), "delta": delta})
    return {
        "fixed": [ka[k] for k in ka if k not in kb],
        "introduced": [kb[k] for k in kb if k not in ka],
        "figures": rows,
        "torch": (a.get("environment.torch"), b.get("environment.torch")),
    }


def render_diff(a: Report, b: Report) -> str:
    d = diff(a, b)
    lines = [f"before: {a['target']} (torch {d['torch'][0]})", f"after:  {b['target']} (torch {d['torch'][1]})", ""]
    lines.append(tabulate([[r["figure"], r["before"], r["after"], r["delta"]] for r in d["figures"]], headers=["", "before", "after", "delta"]))
    for title, items in (("Graph breaks fixed", d["fixed"]), ("Graph breaks introduced", d["introduced"])):
        lines += ["", f"{title}: {len(items)}"]
        lines += [f"  {f['file']}:{f['line']} {f['reason']}" for f in items]
    return "\n".join(lines)
