"""`tcdoctor diff`: what changed between two reports: breaks fixed/introduced (by identity, `break_key`; `check --baseline` uses the same), key figure deltas."""

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


def break_key(f: GraphBreak) -> tuple:
    """A break's identity across two reports: its reason and its user location, that is the file's
    last two path parts (another checkout path on another machine is the same file), the function
    and the source line's text (an edit above it moves its line number, not the break; the number
    stands in when the text is missing). `keyed_breaks` tells apart identical lines."""
    parts = (f.file or "").replace("\\", "/").split("/")
    return (f.reason, "/".join(parts[-2:]), f.function, (f.code or "").strip() or f.line)


def keyed_breaks(report: Report) -> dict[tuple, GraphBreak]:
    """The report's unique breaks by identity: `break_key` and its ordinal among the breaks of the
    same key, in line order (two identical lines in one function are two breaks)."""
    seen: dict[tuple, int] = {}
    out = {}
    for f in sorted(report.graph_breaks.unique, key=lambda f: (f.file or "", f.line or 0)):
        k = break_key(f)
        seen[k] = seen.get(k, 0) + 1
        out[(*k, seen[k])] = f
    return out


def introduced_breaks(before: Report, after: Report) -> list[GraphBreak]:
    """The breaks of `after` that `before` does not have, by identity (never by count)."""
    ka = keyed_breaks(before)
    return [f for k, f in keyed_breaks(after).items() if k not in ka]


def diff(a: Report, b: Report) -> dict:
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
        "fixed": introduced_breaks(b, a),
        "introduced": introduced_breaks(a, b),
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
