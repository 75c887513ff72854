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
takes the report alone.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from ..report.model import Report


class Renderer(abc.ABC):
    """Turns a Report into one output format; reads the report, never measures or decides."""

    name: ClassVar[str]  # the format, as the user would call it: "terminal", "markdown", "html"

    @abc.abstractmethod
    def render(self, report: Report) -> str:
        """The whole report in this format, as one string."""
