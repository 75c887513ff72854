"""The renderer protocol: options go to the constructor, `render(report)` returns the whole text.

Each output format is one `Renderer` subclass in a module of its own (terminal.py, markdown.py,
html.py). Which sections a report has, in which order, which formats draw each and where each
folds is said once, by the outline (outline.py); each section is described once (report/layout.py's
`Section`, built by figures.py, breaks.py, patches.py, compile_table.py, remedy_table.py,
strategies.py, ranks.py, measured.py or a phase's `Phase.layout`); a renderer iterates the outline
and draws each description its own way (`terminal.draw`, `markdown.draw`,
templates/section.html.j2), around a frame of its own (the verdict, the errors). units.py writes
every figure. The options are the constructor's (`TerminalRenderer(limit=5)`,
`HtmlRenderer(fragment=True)`), so a caller configures a renderer once and every call to `render`
takes the report alone. A page that is not a report (a sweep's overview, a diff: outline.py's
`Page`, its sections described by sweep.py and diff.py) is drawn by the same renderer
(`OutlineRenderer.render_sweep`, `render_diff`), from its outline, with no renderer of its own.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from ..report.diff import Diff
    from ..report.model import Report
    from ..report.sweep import Sweep
    from .outline import Page


class Renderer(abc.ABC):
    """Turns a Report into one output format; reads the report, never measures or decides."""

    name: ClassVar[str]  # the format, as the user would call it: "terminal", "markdown", "html"

    @abc.abstractmethod
    def render(self, report: Report) -> str:
        """The whole report in this format, as one string."""


class OutlineRenderer(Renderer):
    """A format that draws the outlines (render/outline.py): a report's, and the pages' (a sweep's
    overview, a diff), each section drawn the one way this format draws a description. The
    checks' own formats (render/junit.py, the annotations of render/github.py) are not."""

    @abc.abstractmethod
    def page(self, page: Page) -> str:
        """A page the outline made (its title, the lines under it, its sections), as one string."""

    def render_sweep(self, sweep: Sweep) -> str:
        """A sweep's overview in this format (render/outline.py `sweep_page`)."""
        from .outline import sweep_page

        return self.page(sweep_page(sweep))

    def render_diff(self, diff: Diff) -> str:
        """A diff of two reports in this format (render/outline.py `diff_page`)."""
        from .outline import diff_page

        return self.page(diff_page(diff))
