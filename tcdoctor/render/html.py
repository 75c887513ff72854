"""Self-contained HTML report: Jinja2 with autoescaping, inline CSS/SVG/JS, no external fetches.

Every string is escaped by the templates (report.html.j2 and what it includes: the described
sections drawn by section.html.j2's macros, the ranks and the structured compile log of
distributed.html.j2, the SVG charts of charts.html.j2); this module passes them text, numbers and
section descriptions (report/layout.py), never markup; a link's href is a `Text`'s.
A Content-Security-Policy allows no network access at all and only the one inline script whose
hash is computed here, so even a string that escaped escaping could not run.
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
from ..report import phases
from ..report.model import Report
from ..report.sections import CompileTime
from . import (
    break_even,
    breaks,
    charts,
    compile_table,
    environment,
    figures,
    graphs,
    measured,
    patches,
    ranks,
    remedy_table,
    trace,
)
from .base import Renderer
from .strategies import sections as strategy_sections

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
    for label, parts, total in (
        ("cold", c.phases, c.cold_s),
        ("warm", c.warm_phases, c.warm_s),
    ):
        if not parts or total is None:
            continue
        keys = ["dynamo_s", "aot_autograd_s", "inductor_lowering_s", "codegen_and_cpp_or_triton_s"]
        row = {k: max(0.0, parts[k]) for k in keys if parts.get(k) is not None}
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
                figures=figures.section(report),
                fragment=self.fragment,
                script=Markup(SCRIPT),
                script_hash=digest,
                ranks=ranks.section(report.distributed),
                trace=trace.section(report.torch_trace, self.base_dir),
                break_even=break_even.section(report),
                graphs=graphs.section(report.graphs),
                environment=environment.section(report),
                compile_table=compile_table.section(
                    report.compile.graphs, report.compile.isa_probe
                ),
                remedy_table=remedy_table.section(report),
                remedy_skipped=remedy_table.skipped_line(report),
                remedy_chart=charts.first_calls(remedy_table.bars(report)),
                phase_sections=phases.layouts(report),
                strategies=strategy_sections(report),
                strategy_charts={  # the benchmark article's table as bars (render/charts.py)
                    title: chart
                    for title, rows in (
                        ("Modes", report.strategies.modes),
                        ("Training step", report.strategies.training),
                    )
                    if (chart := charts.modes(rows or []))
                },
                tried=patches.sections(report),
                recompiles=breaks.recompiles_section(report.recompiles),
                m=measured.sections(report),
            )
        )
