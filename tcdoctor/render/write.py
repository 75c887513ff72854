"""Every output file of every command: analyze's and check's reports (JSON, HTML, Markdown), the
sweep's overview and records, JUnit XML and `diff`'s outputs. One home, so each is written the same
way: rendered in full first, then written atomically (report/files.py `write_atomic`: a temporary
file beside it, then a rename), and a file that cannot be written is one line, exit 2.

Pitfalls. Every format of one call is rendered before any is written, so a renderer that raises
leaves every earlier file as it was (none half-written, no temporary file). The HTML report's
links (TORCH_TRACE, tlparse) are made relative to the folder the HTML file is written to.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..errors import TcdoctorError
from ..report.files import write_atomic

if TYPE_CHECKING:
    from ..report.diff import Diff
    from ..report.model import Report
    from ..report.sweep import Sweep

_FORMATS = (("json", "JSON"), ("html", "HTML"), ("md", "Markdown"), ("warmup", "Warm-up script"))


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


def write_report(
    report: Report,
    json: str | None = None,
    html: str | None = None,
    md: str | None = None,
    patches: str | None = None,
    warmup: str | None = None,
    warmup_named: str | None = None,
    repro: str | None = None,
) -> list[tuple[str, str]]:
    """The report files a path is given for; (label, path) of each written, e.g. ('JSON report', p).
    `patches`: where tcdoctor-patches.diff goes, written only when a source patch was verified.
    `warmup`: where the serving section's start-up warm-up script goes, written with the report
    files (in the same batch: rendered first, then each written atomically) only when the report
    has one; its path is recorded in the report (`serving.warmup.script_path`) before rendering,
    so every format names it: `warmup_named` when given (the path it will have where the files are
    copied to: a Ray sweep's driver), else `warmup` made absolute. `repro`: where tcdoctor-repro.py
    goes (issue 64), with its recorded inputs and the issue text beside it, only for a compiled
    graph classified as a bug; their paths are recorded the same way (`numerics.miscompile.
    script_path`, …) before rendering."""
    extra = _repro_files(report, repro)
    renderers = {"json": report.to_json, "html": _html(report, html), "md": _markdown(report)}
    paths = {"json": json, "html": html, "md": md}
    w = report.serving.warmup if report.serving else None
    script = w.script if w is not None and warmup else None
    if script:
        w.script_path = warmup_named or os.path.abspath(warmup)  # type: ignore[arg-type, union-attr]
        renderers["warmup"], paths["warmup"] = (lambda: script), warmup
    written = _write_formats(renderers, paths, "report", "output")
    for label, path, write in extra:
        write()
        written.append((label, path))
    if patches:
        from .patches import diff_file

        text = diff_file(report)
        if text is not None:
            write_text(patches, text)
            written.append(("Verified patches", patches))
    return written


def patches_path(json: str | None, html: str | None, name: str | None = None) -> str:
    """tcdoctor-patches.diff (or `name`) beside the JSON report (or the HTML one, or here)."""
    from .patches import DIFF_NAME

    beside = json or html
    folder = os.path.dirname(os.path.abspath(beside)) if beside else "."
    return os.path.join(folder, name or DIFF_NAME)


def _repro_files(report: Report, script: str | None) -> list[tuple[str, str, Callable[[], None]]]:
    """(label, path, write) of the reproducer's three files, their paths set on the record; none
    where the report has no bug to reproduce or the search's folder is gone."""
    import shutil

    m = report.numerics.miscompile if report.numerics else None
    if not script or m is None or not m.is_bug or not m.script or not m.folder:
        return []
    inputs_src = os.path.join(m.folder, REPRO_INPUTS)
    if not os.path.isfile(inputs_src):
        return []
    folder = os.path.dirname(os.path.abspath(script))
    m.script_path = os.path.abspath(script)
    m.inputs_path = os.path.join(folder, REPRO_INPUTS)
    m.issue_path = os.path.join(folder, REPRO_ISSUE)
    text, issue = m.script, m.issue or ""

    def copy() -> None:
        try:
            shutil.copyfile(inputs_src, m.inputs_path)  # type: ignore[arg-type]
        except OSError as exc:
            raise TcdoctorError(f"cannot write output: {exc}") from None

    return [
        ("Reproducer", m.script_path, lambda: write_text(m.script_path, text)),  # type: ignore[arg-type]
        ("Reproducer's inputs", m.inputs_path, copy),
        ("Issue text", m.issue_path, lambda: write_text(m.issue_path, issue)),  # type: ignore[arg-type]
    ]


REPRO_NAME = "tcdoctor-repro.py"  # probes/repro_script.SCRIPT_NAME (render/ does not import probes)
REPRO_INPUTS = "tcdoctor-repro-inputs.pt"
REPRO_ISSUE = "tcdoctor-repro-issue.md"
WARMUP_NAME = "tcdoctor-warmup.py"  # the serving section's start-up script, beside the reports


def write_sweep(
    overview: Sweep,
    json: str | None = None,
    html: str | None = None,
    md: str | None = None,
    what: str = "output",
) -> list[tuple[str, str]]:
    """A sweep's overview files a path is given for; (label, path) of each, e.g. ('JSON overview', p)."""
    from .html import HtmlRenderer
    from .markdown import MarkdownRenderer

    renderers = {
        "json": overview.to_json,
        "html": lambda: HtmlRenderer().render_sweep(overview),
        "md": lambda: MarkdownRenderer().render_sweep(overview),
    }
    return _write_formats(renderers, {"json": json, "html": html, "md": md}, "overview", what)


def write_diff(
    diff: Diff, json: str | None = None, html: str | None = None, md: str | None = None
) -> list[tuple[str, str]]:
    """A diff's files a path is given for; (label, path) of each, e.g. ('JSON diff', p)."""
    from .html import HtmlRenderer
    from .markdown import MarkdownRenderer

    renderers = {
        "json": diff.to_json,
        "html": lambda: HtmlRenderer().render_diff(diff),
        "md": lambda: MarkdownRenderer().render_diff(diff),
    }
    return _write_formats(renderers, {"json": json, "html": html, "md": md}, "diff", "output")


def _write_formats(
    renderers: dict[str, Callable[[], str]], paths: dict[str, str | None], noun: str, what: str
) -> list[tuple[str, str]]:
    chosen = [(key, label, paths[key]) for key, label in _FORMATS if paths.get(key)]
    write_all([(path, renderers[key]) for key, _, path in chosen], what)
    return [(label if key == "warmup" else f"{label} {noun}", path) for key, label, path in chosen]


def _html(report: Report, path: str | None) -> Callable[[], str]:
    def render() -> str:
        from .html import HtmlRenderer

        base = os.path.dirname(os.path.abspath(path)) if path else None
        return HtmlRenderer(base_dir=base).render(report)

    return render


def _markdown(report: Report) -> Callable[[], str]:
    def render() -> str:
        from .markdown import MarkdownRenderer

        return MarkdownRenderer().render(report)

    return render
