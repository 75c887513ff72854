"""`tcdoctor diff`: what changed between two reports: breaks fixed/introduced (by identity, `break_key`; `check --baseline` uses the same), key figure deltas, and the regressions
`checks/table.regressions` judged (as `check --baseline` judges them), as text, JSON or Markdown.

The regressions come in as `CheckResult`s made by checks/table.py: checks/ judges and sits above
report/ (its regression judge reads `introduced_breaks` here), so this module takes them as given;
it judges nothing itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

from tabulate import tabulate

from .. import units
from .encoding import dumps
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


def _regression_lines(found: Sequence[Any]) -> list[str]:
    """One line per regression found (a failed check), then what could not be judged."""
    bad = [r for r in found if not r.passed and not r.error]
    lines = [f"Regressions: {len(bad)}"]
    lines += [f"  {r.name}: {r.reason}" for r in bad]
    lines += [f"  not judged: {r.name}: {r.reason}" for r in found if r.error]
    return lines


def diff_json(a: Report, b: Report, found: Sequence[Any] = ()) -> str:
    """The diff as JSON: the figures, the breaks fixed and introduced, and each regression check."""
    d = diff(a, b)
    out = {
        "before": {"target": a.target, "torch": d["torch"][0]},
        "after": {"target": b.target, "torch": d["torch"][1]},
        "figures": d["figures"],
        "fixed": [f.to_dict() for f in d["fixed"]],
        "introduced": [f.to_dict() for f in d["introduced"]],
        "regressions": [
            {
                "name": r.name,
                "status": r.status,
                "figure": r.figure,
                "reason": r.reason,
                "details": list(r.details),
            }
            for r in found
        ],
        "regressed": any(not r.passed and not r.error for r in found),
    }
    return dumps(out, indent=2)


def _md(s: object) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def diff_markdown(a: Report, b: Report, found: Sequence[Any] = ()) -> str:
    """The diff as Markdown (a pull request comment or job summary)."""
    d = diff(a, b)
    lines = [
        f"## tcdoctor diff: {_md(a.target)} → {_md(b.target)}",
        "",
        f"torch {_md(d['torch'][0])} → {_md(d['torch'][1])}",
        "",
        "| figure | before | after | delta |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {_md(r['figure'])} | {_md(r['before'])} | {_md(r['after'])} | {_md(r['delta'])} |"
        for r in d["figures"]
    ]
    for title, items in (
        ("Graph breaks fixed", d["fixed"]),
        ("Graph breaks introduced", d["introduced"]),
    ):
        lines += ["", f"### {title}: {len(items)}", ""]
        lines += [f"- `{_md(f.where)}` {_md(f.reason)}" for f in items]
    if found:
        lines += ["", "### " + _regression_lines(found)[0], ""]
        lines += [f"- {line.strip()}" for line in _regression_lines(found)[1:]]
    return "\n".join(lines) + "\n"


def render_diff(a: Report, b: Report, found: Sequence[Any] = ()) -> str:
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
    if found:
        lines += ["", *_regression_lines(found)]
    return "\n".join(lines)
