"""Every output file of every command: the report files (analyze, report, merge, check, a sweep's
targets) and the files beside a report, a sweep's overview, a diff's files, JUnit XML. One home,
so each is written the same way: rendered in full first, then written atomically
(report/files.py `write_atomic`: a temporary file beside it, then a rename), and a file that
cannot be written is one line, exit 2. Which formats go where is one value, `Outputs`
(formats.py), whatever the subject: `write_formats` writes a report, an overview or a diff alike.

Pitfalls. Every format of one call is rendered before any is written, so a renderer that raises
leaves every earlier file as it was (none half-written, no temporary file). The HTML report's
links (TORCH_TRACE, tlparse) are made relative to the folder the HTML file is written to. A file
beside the report (the warm-up script, the reproducer) has its path recorded in the report before
any format is rendered, so every format names it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from ..errors import TcdoctorError
from ..report.files import write_atomic
from .formats import Outputs

if TYPE_CHECKING:
    from ..report.model import Report

REPRO_NAME = "tcdoctor-repro.py"  # probes/repro_script.SCRIPT_NAME (render/ does not import probes)
REPRO_INPUTS = "tcdoctor-repro-inputs.pt"
REPRO_ISSUE = "tcdoctor-repro-issue.md"
WARMUP_NAME = "tcdoctor-warmup.py"  # the serving section's start-up script, beside the reports


def write_text(path: str, text: str, what: str = "output") -> None:
    """One file, atomically; an OSError is one line, `cannot write <what>: ...` (exit 2)."""
    write_all([(path, lambda: text)], what)


def write_all(files: Sequence[tuple[str, Callable[[], str]]], what: str = "output") -> None:
    """Render every (path, render) first, then write each atomically: a renderer that raises
    writes nothing."""
    texts = [(path, render()) for path, render in files]
    try:
        for path, text in texts:
            write_atomic(path, text)
    except OSError as exc:
        raise TcdoctorError(f"cannot write {what}: {exc}") from None


def write_formats(
    subject: Any,
    outputs: Outputs,
    noun: str,
    what: str = "output",
    also: Sequence[tuple[str, str, str]] = (),
) -> list[tuple[str, str]]:
    """`subject` (a Report, a sweep's Sweep, a Diff) in every format `outputs` asks for, and the
    files `also` ((label, path, text)) in the same batch; (label, path) of each written, e.g.
    ('JSON report', p)."""
    chosen = outputs.chosen()
    batch = [(p, partial(f.render, subject, p)) for f, p in chosen]
    write_all(batch + [(p, partial(str, text)) for _, p, text in also], what)
    return [(f"{f.label} {noun}", p) for f, p in chosen] + [(label, p) for label, p, _ in also]


def write_report(report: Report, outputs: Outputs) -> list[tuple[str, str]]:
    """The report's files `outputs` asks for, and the files beside it (`outputs.beside`), each
    only where the report has one: 'warmup', the serving section's start-up script (written in
    the same batch as the formats); 'repro', the reproducer of a compiled graph classified as a
    bug (issue 64) with its recorded inputs and the issue text; 'patches', the verified source
    patches. Their paths are recorded in the report (`serving.warmup.script_path`,
    `numerics.miscompile.script_path`, ...) before rendering: `outputs.named` (a Ray sweep's
    driver folder, else the absolute path). (label, path) of each written."""
    warmup = _warmup(report, outputs) if "warmup" in outputs.beside else None
    later = _repro(report, outputs) if "repro" in outputs.beside else []
    if "patches" in outputs.beside:
        later.append(_patches(report, outputs))
    written = write_formats(report, outputs, "report", also=[warmup] if warmup else ())
    for label, path, write in later:
        if write():
            written.append((label, path))
    return written


def _warmup(report: Report, outputs: Outputs) -> tuple[str, str, str] | None:
    """(label, path, text) of the warm-up script, its path set on the record; None without one."""
    w = report.serving.warmup if report.serving else None
    if w is None or not w.script:
        return None
    path = outputs.beside_path(WARMUP_NAME)
    w.script_path = outputs.named(path)
    return "Warm-up script", path, w.script


def _patches(report: Report, outputs: Outputs) -> tuple[str, str, Callable[[], bool]]:
    from .patches import DIFF_NAME, diff_file

    path = outputs.beside_path(DIFF_NAME)

    def write() -> bool:
        text = diff_file(report)
        if text is not None:
            write_text(path, text)
        return text is not None

    return ("Verified patches", path, write)


def _repro(report: Report, outputs: Outputs) -> list[tuple[str, str, Callable[[], bool]]]:
    """The reproducer's three files, their paths set on the record; none where the report has no
    bug to reproduce or the search's folder is gone."""
    m = report.numerics.miscompile if report.numerics else None
    if m is None or not m.is_bug or not m.script or not m.folder:
        return []
    inputs_src = os.path.join(m.folder, REPRO_INPUTS)
    if not os.path.isfile(inputs_src):
        return []
    script = m.script_path = os.path.abspath(outputs.beside_path(REPRO_NAME))
    inputs = m.inputs_path = outputs.beside_path(REPRO_INPUTS)
    issue = m.issue_path = outputs.beside_path(REPRO_ISSUE)
    text, issue_text = m.script, m.issue or ""

    def copy() -> bool:
        try:
            shutil.copyfile(inputs_src, inputs)
        except OSError as exc:
            raise TcdoctorError(f"cannot write output: {exc}") from None
        return True

    return [
        ("Reproducer", script, lambda: write_text(script, text) or True),
        ("Reproducer's inputs", inputs, copy),
        ("Issue text", issue, lambda: write_text(issue, issue_text) or True),
    ]
