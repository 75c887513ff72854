"""`tcdoctor diff BEFORE AFTER`: what changed between two saved reports, and whether it regressed.

Method: both reports are read by commands/saved.py `load_saved`; the regressions are
checks/table.py `regressions`, the rules `check --baseline` judges with no margin; the diff's data
is report/diff.py `Diff` (each report's generation judged by verdict/generation.py `judged` with
the rules saved in it, as its headline was), drawn by every format from its outline
(render/outline.py `diff_page`).
The files asked for are written first, then the terminal's diff and where each file is, so a
closed stdout (`| head`) never costs a file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..errors import EXIT_CHECK_FAILED
from ..render.formats import Outputs
from .outputs import echo_written
from .saved import load_saved

if TYPE_CHECKING:
    from ..report.model import Report
    from ..verdict.generation import Judged


def run_diff(before: str, after: str, no_fail: bool, flags: dict[str, Any]) -> int:
    """The diff's files and its terminal text; the exit code: 1 on a regression (0 with
    `no_fail`), else 0. `flags`: the output flags' values (`Outputs.take`)."""
    from ..checks.table import regressions
    from ..render.terminal import TerminalRenderer
    from ..render.write import write_formats
    from ..report.diff import Diff

    a, b = load_saved(before), load_saved(after)
    d = Diff(a, b, regressions(a, b), (_judged(a), _judged(b)))
    written = write_formats(d, Outputs.take(flags), "diff")
    click.echo(TerminalRenderer().render_diff(d))
    echo_written(written)
    return EXIT_CHECK_FAILED if d.regressed and not no_fail else 0


def _judged(report: Report) -> Judged | None:
    """The report's generation judgement, with the rules its verdict was given with (None: no
    generation section)."""
    from ..thresholds import Rules
    from ..verdict.generation import judged

    return judged(report, Rules.from_dict(report.verdict.rules))
