"""The renderer protocol: options go to the constructor, `render(report)` returns the whole text.

Each output format is one `Renderer` subclass in a module of its own (terminal.py, markdown.py,
html.py) that renders every section itself, the distributed rank table included, so a format's
whole look is read in one file; what the formats share is text, not layout (units.py's figures,
ranks.py's rank cells). The options are the constructor's (`TerminalRenderer(limit=5)`,
`HtmlRenderer(fragment=True)`), so a caller configures a renderer once and every call to
`render` takes the report alone.
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
