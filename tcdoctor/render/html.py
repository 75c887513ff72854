"""Self-contained HTML report: Jinja2 with autoescaping, inline CSS/SVG/JS, no external fetches.

The page is its frame (heading, verdict, errors, how to reproduce: report.html.j2) around the
key-figure tiles and every section the outline (render/outline.py) gives the HTML, each in its fold
with its chart: section.html.j2's macros draw the descriptions, charts.html.j2 the SVG charts. A
page that is not a report (a sweep's overview, a diff: outline.py's `Page`) is page.html.j2: its
title, the lines under it and its sections, drawn by the same macros. Every string is escaped by
the templates (Jinja's autoescape, this format's one escaper, in the one environment `_env`); this
module passes them the report, the outline's folds (text, numbers and section descriptions,
report/layout.py), never markup; a link's href is a `Text`'s. A Content-Security-Policy allows no
network access at all and only the one inline script of the page whose hash is computed here (the
report's filter box above a long table; a page's, the filter box and the sorting of a sortable
table by a click on a column), so even a string that escaped escaping could not run.
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
from .base import OutlineRenderer
from .outline import HTML, Page, drawn, folds, outline, tiles

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

SORT_SCRIPT = r"""
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
PAGE_SCRIPT = SCRIPT + SORT_SCRIPT  # a page's: the filter box and the sorting


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
class HtmlRenderer(OutlineRenderer):
    """The self-contained HTML page; `fragment` leaves out the document shell and the script (a
    notebook's rich display), `base_dir` is the folder the file is written to (local links are
    made relative to it)."""

    name = "html"
    fragment: bool = False
    base_dir: str | None = None

    def render(self, report: Report) -> str:
        placed = outline(report, self.base_dir)
        return (
            _env()
            .get_template("report.html.j2")
            .render(
                r=report,
                v=report.verdict,
                fragment=self.fragment,
                script=Markup(SCRIPT),
                script_hash=_digest(SCRIPT),
                tiles=tiles(placed),
                folds=folds(placed),
            )
        )

    def page(self, page: Page) -> str:
        return (
            _env()
            .get_template("page.html.j2")
            .render(
                title=page.title,
                lead=page.lead,
                parts=drawn(page.placed, HTML),
                script=Markup(PAGE_SCRIPT),
                script_hash=_digest(PAGE_SCRIPT),
            )
        )


def _digest(script: str) -> str:
    """The script's hash, as the Content-Security-Policy allows it."""
    return base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
