"""A sweep's overview in three formats: terminal table, Markdown, self-contained HTML.

One renderer class per format, each `render(sweep)` returning the whole text. What they share is
text: `cells(row)` (every figure written by units.py) and the summary lines of `Sweep.summary_lines`.
The HTML page is a Jinja template (templates/sweep.html.j2) with autoescape on: every string from a
target (its name, its reason) is escaped by the template, the speedup chart is SVG drawn by the
template from numbers computed here, and the one inline script (sorting the table by a column)
runs under a Content-Security-Policy that allows no network access and only that script's hash.
"""

from __future__ import annotations

import abc
import base64
import hashlib
from dataclasses import dataclass
from typing import Any, ClassVar

from markupsafe import Markup
from tabulate import tabulate

from .. import units
from ..outcomes import Decision
from ..report.sweep import METHOD_CHANGES, Sweep, SweepRow
from .html import _env
from .markdown import _esc

HEADERS = [
    "target",
    "status",
    "exit",
    "verdict",
    "breaks",
    "recompiles",
    "speedup (95% CI)",
    "compile cold / warm",
    "break-even",
    "memory eager÷compiled",
    "numerics",
    "took",
]

SCRIPT = r"""
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var asc = th.dataset.dir !== 'asc';
      table.querySelectorAll('th').forEach(function (h) { delete h.dataset.dir; });
      th.dataset.dir = asc ? 'asc' : 'desc';
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.v, y = b.cells[col].dataset.v;
        if (x === '' || y === '') { return (x === '') - (y === ''); }
        var nx = Number(x), ny = Number(y);
        var c = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  var m = /^#sort=(\d+)(-desc)?$/.exec(location.hash);  // a link that opens the table sorted
  var th = m && table.querySelectorAll('th')[Number(m[1])];
  if (th) { th.click(); if (m[2]) { th.click(); } }
});
"""


def cells(row: SweepRow) -> list[str]:
    """The row's figures as text, in HEADERS order (blank for a target that has no report)."""
    head = [row.target, row.status, "" if row.exit_code is None else str(row.exit_code)]
    if row.status in ("failed", "missing"):
        return head + [""] * 8 + [units.seconds(row.duration_s) if row.duration_s else ""]
    return head + [
        units.decision_text(row.shown_verdict) if row.shown_verdict else "no verdict",
        units.count(row.graph_breaks),
        units.count(row.recompiles),
        units.ratio(row.speedup, row.speedup_ci),
        units.pair(units.seconds, row.cold_compile_s, row.warm_compile_s),
        _break_even(row),
        units.ratio(row.memory_compression),
        units.numerics_status(row.numerics),
        units.seconds(row.duration_s),
    ]


def _break_even(row: SweepRow) -> str:
    if row.break_even_calls:
        return units.calls(row.break_even_calls)
    if row.speedup is not None and row.speedup <= 1:
        return "never (not faster)"
    return units.NA


def _sort_values(row: SweepRow) -> list[Any]:
    """What each column sorts by ('' sorts last): numbers where the column is a figure."""
    order = {
        Decision.COMPILE: 0,
        Decision.COMPILE_AFTER_FIXES: 1,
        Decision.CANT_TELL: 2,
        Decision.DONT_COMPILE: 3,
    }
    return [
        row.target,
        row.status,
        row.exit_code,
        order.get(row.shown_verdict or "", ""),
        row.graph_breaks,
        row.recompiles,
        row.speedup,
        row.cold_compile_s,
        row.break_even_calls,
        row.memory_compression,
        {True: 1, False: 0}.get(row.numerics, "") if row.numerics is not None else "",
        row.duration_s,
    ]


def _notes(sweep: Sweep) -> list[str]:
    """Why each target is not complete and what changed against the baseline, one line each."""
    lines = [
        f"{r.target}: {r.status} (exit {r.exit_code}): {r.reason}" for r in sweep.rows if r.reason
    ]
    for r in sweep.rows:
        lines += [f"{r.target}: {c['text']}" for c in r.changes or [] if c["kind"] != "new_target"]
    lines += [f"{t}: in the baseline, not in this sweep" for t in sweep.removed]
    return lines


def _title(sweep: Sweep) -> str:
    shard = f", shard {sweep.shard}" if sweep.shard else ""
    analyses = sum(r.duration_s or 0.0 for r in sweep.rows)
    return (
        f"tcdoctor sweep: {len(sweep.rows)} target(s){shard}, torch {sweep.torch or '?'}, "
        f"backend {sweep.options.get('backend', '?')}; analyses {units.seconds(analyses)} "
        f"in all, this run's wall time {units.seconds(sweep.wall_s)}"
    )


class SweepRenderer(abc.ABC):
    """Turns a sweep's overview into one output format (render/base.py's protocol, for a Sweep)."""

    name: ClassVar[str]

    @abc.abstractmethod
    def render(self, sweep: Sweep) -> str:
        """The whole overview in this format, as one string."""


@dataclass(frozen=True)
class SweepTerminalRenderer(SweepRenderer):
    """The overview table and summary for a terminal (stdout)."""

    name = "terminal"

    def render(self, sweep: Sweep) -> str:
        table = tabulate([cells(r) for r in sweep.rows], headers=HEADERS)
        parts = [_title(sweep), "", table, ""] + sweep.summary_lines()
        notes = _notes(sweep)
        if notes:
            parts += ["", *notes]
        parts += [f"merge: {w}" for w in sweep.warnings]
        return "\n".join(parts)


@dataclass(frozen=True)
class SweepMarkdownRenderer(SweepRenderer):
    """The overview as Markdown (a GitHub issue or job summary): table, summary, notes, method."""

    name = "markdown"

    def render(self, sweep: Sweep) -> str:
        head = "| " + " | ".join(HEADERS) + " |"
        rule = "|" + "---|" * len(HEADERS)
        body = []
        for r in sweep.rows:
            c = [_esc(x) for x in cells(r)]
            if r.report and r.status in ("complete", "incomplete"):
                c[0] = f"[{c[0]}]({r.report})"
            body.append("| " + " | ".join(c) + " |")
        lines = [f"## {_esc(_title(sweep))}", "", head, rule, *body, ""]
        lines += [f"- {_esc(s)}" for s in sweep.summary_lines()]
        notes = _notes(sweep) + [f"merge: {w}" for w in sweep.warnings]
        if notes:
            lines += ["", "### Notes", ""] + [f"- {_esc(n)}" for n in notes]
        lines += ["", f"<details><summary>How</summary>\n\n{_esc(sweep.summary['method'])}"]
        if sweep.baseline:
            lines += ["", _esc(METHOD_CHANGES)]
        lines += ["", "</details>", ""]
        return "\n".join(lines)


def chart(rows: list[SweepRow], width: int = 720) -> dict[str, Any] | None:
    """Coordinates of the speedup chart: one dot per timed model, its 95% CI as a whisker, a line
    at 1× (eager); a log scale so 0.5× and 2× sit equally far from 1×. None when nothing was timed."""
    import math

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


@dataclass(frozen=True)
class SweepHtmlRenderer(SweepRenderer):
    """The self-contained overview page: sortable table linking each target's report, a speedup
    chart with CI whiskers, the summary and its method. Nothing is fetched."""

    name = "html"

    def render(self, sweep: Sweep) -> str:
        digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
        rows = [
            {
                "cells": list(zip(cells(r), ["" if v is None else v for v in _sort_values(r)])),
                "link": r.report if r.status in ("complete", "incomplete") else None,
                "status": r.status,
                "reason": r.reason,
                "changes": [c["text"] for c in r.changes or [] if c["kind"] != "new_target"],
                "new": any(c["kind"] == "new_target" for c in r.changes or []),
            }
            for r in sweep.rows
        ]
        return (
            _env()
            .get_template("sweep.html.j2")
            .render(
                title=_title(sweep),
                headers=HEADERS,
                rows=rows,
                summary=sweep.summary_lines(),
                method=sweep.summary["method"],
                changes_method=METHOD_CHANGES if sweep.baseline else None,
                baseline=sweep.baseline,
                removed=sweep.removed,
                warnings=sweep.warnings,
                chart=chart(sweep.rows),
                script=Markup(SCRIPT),  # a constant: the only unescaped text
                script_hash=digest,
            )
        )
