"""Self-contained HTML report: Jinja2 with autoescaping, inline CSS/SVG/JS, no external fetches.

Every string is escaped by the templates (report.html.j2, and the rank table, tlparse block and SVG
charts it includes: distributed.html.j2, charts.html.j2); this module passes them text and numbers,
never markup. A Content-Security-Policy allows no network access at all and only the one inline script
whose hash is computed here, so even a string that escaped escaping could not run.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
from dataclasses import dataclass
from typing import Any

import jinja2
from markupsafe import Markup

from .. import units
from ..report.model import Report
from ..report.sections import CompileTime, Distributed, TorchTrace
from . import attribution, charts, compile_table, patches, ranks, remedy_table
from .base import Renderer

SCRIPT = """
document.querySelectorAll('input.filter').forEach(function (box) {
  box.addEventListener('input', function () {
    var q = box.value.toLowerCase();
    document.querySelectorAll(box.dataset.target + ' tbody tr').forEach(function (tr) {
      tr.style.display = tr.textContent.toLowerCase().indexOf(q) >= 0 ? '' : 'none';
    });
  });
});
"""


# Every figure in the template is written by the formatter of the same name in units.py.
FILTERS = (
    "seconds",
    "threads",
    "first_call",
    "nbytes",
    "ratio",
    "ci",
    "percent",
    "sci",
    "count",
    "grouped",
    "calls",
    "numerics_status",
    "decision_text",
    "regimes",
    "another_run",
    "stopped",
    "load",
)


def _template_source(name: str) -> str:
    return (
        importlib.resources.files("tcdoctor.templates").joinpath(name).read_text(encoding="utf-8")
    )


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_template_source),
        autoescape=True,
        undefined=jinja2.ChainableUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update({name: _defined(getattr(units, name)) for name in FILTERS})
    env.filters["blank"] = _blank
    env.filters["f1"] = "{:.1f}".format  # a chart coordinate (render/charts.py)
    return env


def _defined(f):
    """A missing key in an old or partial report renders as 'not measured', never as an error."""

    def wrapper(value, *args):
        value = None if isinstance(value, jinja2.Undefined) else value
        return f(value, *(None if isinstance(a, jinja2.Undefined) else a for a in args))

    return wrapper


def _blank(value: Any) -> Any:
    """A field a section did not fill prints as nothing, as a missing key did in the dict report.

    A typed section has every field, None where the JSON had no key (a phase that did not run
    leaves only `not_measured`); Jinja would print None as 'None'.
    """
    return "" if value is None or isinstance(value, jinja2.Undefined) else value


def _phase_bars(c: CompileTime) -> dict[str, dict[str, float]]:
    bars = {}
    for label, phases, total in (
        ("cold", c.phases, c.cold_s),
        ("warm", c.warm_phases, c.warm_s),
    ):
        if not phases or total is None:
            continue
        keys = ["dynamo_s", "aot_autograd_s", "inductor_lowering_s", "codegen_and_cpp_or_triton_s"]
        row = {k: max(0.0, phases[k]) for k in keys if phases.get(k) is not None}
        row["outside_compiler_s"] = max(0.0, total - sum(row.values()))
        bars[label] = row
    return bars


def _charts(report: Report) -> dict[str, Any]:
    """The inline SVGs' geometry (render/charts.py; templates/charts.html.j2 draws them): per-call
    time, compile phases, and break-even when compiling pays back."""
    rt, be = report.runtime, report.verdict.break_even or {}
    ch: dict[str, Any] = {
        "speed": charts.boxplot({"eager": rt.eager, "compiled": rt.compiled})
        if rt.samples
        else None,
        "compile": charts.stacked_phases(_phase_bars(report.compile)),
        "break_even": None,
    }
    if be.get("cold"):
        costs = {"cold cache": report.compile.cold_s}
        if be.get("warm"):
            costs["warm cache"] = report.compile.warm_s
        ch["break_even"] = charts.break_even(
            rt.eager.median_s,
            rt.compiled.median_s,
            costs,
            max(10, 2 * be["cold"]["calls"]),
        )
    return ch


def _compile_table(c: CompileTime) -> dict[str, Any] | None:
    """Every compiled frame of the cold first call, largest first, as text for the template."""
    graphs = c.graphs
    if not graphs or not graphs.rows:
        return None
    return {
        "title": compile_table.TITLE,
        "headers": compile_table.HEADERS,
        "rows": [compile_table.cells(r) for r in graphs.rows],
        "notes": compile_table.check_lines(graphs),
        "method": graphs.method,
    }


def _attribution(report: Report) -> list[dict[str, Any]]:
    """The memory growth and the numerics drift, each its summary line, table and notes."""
    a, d = report.memory.attribution, report.numerics.drift
    out = []
    if a is not None:  # a report made before the attribution existed re-renders unchanged
        out.append(
            {
                "title": attribution.MEMORY_TITLE,
                "summary": attribution.memory_summary(a),
                "headers": attribution.MEMORY_HEADERS,
                "rows": attribution.memory_rows(a),
                "notes": attribution.memory_notes(a),
            }
        )
    if d is not None:
        out.append(
            {
                "title": attribution.DRIFT_TITLE,
                "summary": attribution.drift_summary(d),
                "headers": attribution.DRIFT_HEADERS,
                "rows": attribution.drift_rows(d),
                "notes": attribution.drift_notes(d, report.fixes),
            }
        )
    return out


def _remedy_table(report: Report) -> dict[str, Any] | None:
    """Cold, warm and each tried remedy's first call and speed, with its chart, for the template."""
    if not remedy_table.shown(report):
        line = remedy_table.skipped_line(report)
        return {"skipped": line} if line else None
    return {
        "title": remedy_table.TITLE,
        "headers": remedy_table.HEADERS,
        "rows": remedy_table.rows(report),
        "notes": remedy_table.notes(report),
        "chart": charts.first_calls(remedy_table.bars(report)),
    }


def _patches(report: Report) -> list[dict[str, Any]]:
    """Each source patch's heading, checks, measured figures, note and diff (render/patches.py)."""
    return [
        {
            "heading": patches.heading(row),
            "verified": bool(row.patch is not None and row.patch.verified),
            "checks": patches.check_lines(row),
            "measured": patches.measured(row),
            "note": row.patch.note if row.patch is not None else None,
            "diff": patches.diff_of(row),
        }
        for row in patches.patch_rows(report)
    ]


def _ranks(sec: Distributed | None) -> dict[str, Any] | None:
    """The rank table (render/ranks.py's text), the slowest rank per phase and how each figure
    was measured, as text for the template (distributed.html.j2 escapes it)."""
    if not sec:
        return None
    return {
        "count": len(sec.ranks),
        "world_size": str(sec.world_size),
        "headers": ranks.HEADERS,
        "rows": ranks.rows(sec),
        "summary": ranks.summary_lines(sec),
        "slowest": [
            (
                p,
                str(s.get("rank")),
                units.seconds(s.get("seconds")),
                units.seconds(s.get("fastest_s")),
            )
            for p, s in (sec.slowest or {}).items()
        ],
        "how": [f"{k}: {v}." for k, v in (sec.method or {}).items()],
    }


def _trace(tt: TorchTrace | None, base_dir: str | None) -> dict[str, Any] | None:
    """A link to tlparse's report (relative to the HTML file), or the command that would make it."""
    if not tt:
        return None
    return {
        "link": units.relative_link(tt.index, base_dir),
        "index": tt.index,
        "command": tt.command or "",
        "error": str(tt.tlparse_error) if tt.tlparse_error else None,
        "attach": tt.attach,
        "note": tt.note or "",
    }


@dataclass(frozen=True)
class HtmlRenderer(Renderer):
    """The self-contained HTML page; `fragment` leaves out the document shell and the script (a
    notebook's rich display), `base_dir` is the folder the file is written to (local links are
    made relative to it)."""

    name = "html"
    fragment: bool = False
    base_dir: str | None = None

    def render(self, report: Report) -> str:
        digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
        return (
            _env()
            .get_template("report.html.j2")
            .render(
                r=report,
                v=report.verdict,
                charts=_charts(report),
                fragment=self.fragment,
                script=Markup(SCRIPT),
                script_hash=digest,
                ranks=_ranks(report.distributed),
                trace=_trace(report.torch_trace, self.base_dir),
                compile_table=_compile_table(report.compile),
                attribution=_attribution(report),
                remedy_table=_remedy_table(report),
                other_fixes=patches.other_rows(report),
                patches=_patches(report),
            )
        )
