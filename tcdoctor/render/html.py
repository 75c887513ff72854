"""Self-contained HTML report: Jinja2 with autoescaping, inline CSS/SVG/JS, no external fetches.

The page is its frame (heading, verdict, errors, key-figure tiles, how to reproduce: report.html.j2)
around every section the outline (render/outline.py) gives the HTML, each in its fold with its
chart: section.html.j2's macros draw the descriptions, charts.html.j2 the SVG charts. Every string
is escaped by the templates; this module passes them the report, the outline's folds (text,
numbers and section descriptions, report/layout.py), never markup; a link's href is a `Text`'s.
A Content-Security-Policy allows no network access at all and only the one inline script whose
hash is computed here (the filter box above a long table), so even a string that escaped escaping
could not run.
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
from .base import Renderer
from .outline import folds, outline

SCRIPT = """
document.querySelectorAll('input.filter').forEach(function (box) {
  var table = box.nextElementSibling;
  box.addEventListener('input', function () {
    var q = box.value.toLowerCase();
    table.querySelectorAll('tr').forEach(function (tr) {
      if (tr.querySelector('th')) { return; }
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
                fragment=self.fragment,
                script=Markup(SCRIPT),
                script_hash=digest,
                folds=folds(outline(report, self.base_dir)),
            )
        )
