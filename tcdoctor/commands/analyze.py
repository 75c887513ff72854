"""`tcdoctor analyze TARGET`: the one analysis (run/pipeline.py), its report files and the files
beside them (one `Outputs`: render/formats.py), the terminal summary, and on GitHub Actions the
step summary and the annotations. Also the analysis that `fix TARGET` runs (`analysis`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..options import Options
from ..render.formats import Outputs
from .outputs import github, write_outputs

if TYPE_CHECKING:
    from ..report.model import Report

# the files analyze writes beside its report, where the report has one (render/write.py)
BESIDE = ("warmup", "repro", "patches")


def analysis(
    target: str, analysis: dict[str, Any], quiet: bool, expected_calls: int | None
) -> tuple[Report, int]:
    """The analysis of TARGET with the analysis options as click parsed them, with progress
    unless --quiet; the report and its exit code."""
    from ..run.pipeline import analyze as run_pipeline

    opts = Options.from_cli(analysis)
    return run_pipeline(target, opts, expected_calls=expected_calls, progress=not quiet)


def run_analyze(
    target: str, quiet: bool, expected_calls: int | None, no_annotations: bool, **kw: Any
) -> int:
    """`tcdoctor analyze`: the files first, then the terminal summary; the exit code."""
    from ..render.github import GitHubAnnotations, step_summary
    from ..render.terminal import TerminalRenderer

    outputs = Outputs.take(kw, BESIDE)
    report, code = analysis(target, kw, quiet, expected_calls)
    write_outputs(report, outputs, TerminalRenderer().render(report) + "\n")
    # on GitHub Actions: the step summary, and the annotations unless --no-annotations
    annotations = None if no_annotations else (lambda: GitHubAnnotations().render(report))
    github(lambda: step_summary(report), annotations)
    return code
