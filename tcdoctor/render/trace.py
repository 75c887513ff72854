"""The structured compile log (TORCH_TRACE) of a run, described once (report/layout.py) for every
format: where the logs are, the one to attach to a PyTorch issue (and the folder of the other
ranks' logs), tlparse's report of them (a link in the HTML, relative to the HTML's folder) or the
command that would render them and why tlparse did not, and the cost the trace adds to the compile
figures (a how line: not in the terminal).

Pitfalls: the link is made relative to the folder the HTML is written to (`base_dir`; the current
directory when none is given), so a report moved away from its trace folder links nowhere; the
terminal and the Markdown print the path itself. A report whose run wrote no log still says so
(the run asked for a trace); a report without the `torch_trace` section gets no section at all.
"""

from __future__ import annotations

import os

from .. import units
from ..report.layout import Note, Section, Table, Text
from ..report.sections import TorchTrace

TITLE = "Structured compile log (TORCH_TRACE)"
NOT_INSTALLED = "tlparse is not installed: pip install 'tcdoctor[tlparse]'"


def _why(tt: TorchTrace) -> str | None:
    """Why tlparse's report is missing: it failed, it is not installed, or it wrote no index."""
    if tt.tlparse_error:
        return f"tlparse failed: {tt.tlparse_error}"
    if not tt.attach:  # no log: nothing to render, nothing to install for
        return None
    return NOT_INSTALLED if tt.tlparse is None else "tlparse wrote no index.html"


def _rows(tt: TorchTrace, base_dir: str | None) -> list[list[str]]:
    """The logs' folder, the log to attach, the other ranks' folder, tlparse's report or command."""
    rows = [["logs", tt.dir or units.NA]]
    if tt.attach:
        rows.append(["attach to a PyTorch issue", tt.attach])
        if len(tt.logs) > 1:
            rows.append(["the other ranks' logs", os.path.dirname(tt.attach)])
    if tt.index:
        link = units.relative_link(tt.index, base_dir)
        rows.append(["tlparse report", Text(tt.index, href=link)])
    else:
        rows.append(["render it with", tt.command or units.NA])
    return rows


def section(tt: TorchTrace | None, base_dir: str | None = None) -> Section | None:
    """The trace's files and how to read them; None when the report has no trace."""
    if not tt:
        return None
    lines = [] if tt.attach else [Note("No structured compile log was written.")]
    why = None if tt.index else _why(tt)
    lines += [Note(why)] if why else []
    lines += [Note(tt.note, how=True)] if tt.note else []
    return Section(
        TITLE,
        tables=(Table(("", "path or command"), _rows(tt, base_dir), code=(1,)),),
        notes=tuple(lines),
    )
