"""Where a command's results go: a gate's, for `check` and `check --sweep` alike (`Gate`), the
report files of `analyze`, `report` and `merge` (`write_outputs`), and the GitHub Actions outputs
of `analyze` and `check` (`github`).

Every output reads the same `CheckResult`s (checks/outcome.py), whatever check made them: the
terminal lines (`gate_lines`), the JUnit XML (render/junit.py), the step summary's table and the
annotations (render/github.py). A check added to the gate's table reaches each with no code of its
own here. Pitfalls: the JUnit file is written first (as the report files: a closed stdout never
costs one); a step summary that cannot be written is one warning line, never another exit code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import click

from ..errors import TcdoctorError

if TYPE_CHECKING:
    from ..checks.outcome import CheckResult
    from ..render.formats import Outputs
    from ..report.model import Report


def github(summary: Callable[[], str], annotations: Callable[[], str] | None) -> None:
    """On GitHub Actions (GITHUB_ACTIONS=true): append `summary()` to $GITHUB_STEP_SUMMARY and
    print `annotations()`. A summary that cannot be written is one warning line: it must not
    change the exit code a gate reports."""
    from ..render.github import in_github_actions, write_step_summary

    if not in_github_actions():
        return
    try:
        write_step_summary(summary())
    except OSError as exc:
        click.echo(f"tcdoctor: warning: cannot write GITHUB_STEP_SUMMARY: {exc}", err=True)
    text = annotations() if annotations else ""
    if text:
        click.echo(text)


def write_outputs(report: Report, outputs: Outputs, summary: str | None = None) -> None:
    """`analyze`, `report` and `merge`: write the report files and the files beside them that
    `outputs` asks for (render/write.py `write_report`), then print `summary` and where the files
    are: files first, so a closed stdout (`| head`) never costs a report."""
    from ..render.write import write_report

    written = write_report(report, outputs)
    if summary is not None:
        click.echo(summary)
    echo_written(written)


def echo_written(written: list[tuple[str, str]]) -> None:
    """One line per file written: what it is and where ('HTML report: out.html')."""
    for label, p in written:
        click.echo(f"{label}: {p}")


class Gate:
    """The outputs of one gate: the JUnit file, the files `write_files` writes (`outputs`: the
    report's formats asked for), the terminal lines, then on GitHub Actions the step summary and
    the annotations. `not_judged` writes the
    same outputs for a gate that ended in an error before judging (exit 2 or 3). `inconclusive`:
    how an inconclusive check counts (`--inconclusive fail|pass`), said in its reason (`counted`)
    and applied to the exit code."""

    def __init__(
        self,
        junit_path: str | None,
        links: dict[str, str | None],
        annotations: bool,
        inconclusive: str = "fail",
        outputs: Outputs | None = None,
    ):
        from ..render.formats import Outputs

        self.junit_path = junit_path
        self.outputs = outputs or Outputs()
        self.links = {k: v for k, v in {**links, **self.outputs.paths}.items() if v}
        self.annotations = annotations
        self.inconclusive = inconclusive

    def counted(self, results: list[CheckResult]) -> list[CheckResult]:
        """The results, each inconclusive one's reason saying how this gate counts it."""
        from ..checks.outcome import counted

        return counted(results, self.inconclusive)

    def finish(
        self,
        results: list[CheckResult],
        note: str | None = None,
        *,
        junit: Callable[[], str] | None = None,
        write_files: Callable[[], list[tuple[str, str]]] = list,
        summary: Callable[[], str] | None = None,
        annotations: Callable[[], str] | None = None,
    ) -> int:
        """Write every output of `results`; the gate's exit code."""
        from ..checks.outcome import gate_exit_code, gate_lines
        from ..render.github import GitHubAnnotations, step_summary
        from ..render.junit import JUnitRenderer
        from ..render.write import write_text

        if self.junit_path:
            xml = junit() if junit else JUnitRenderer(results, self.links).render_target(None)
            write_text(self.junit_path, xml)
        written = write_files()
        click.echo("\n".join(gate_lines(results, note)))
        echo_written(written)
        if self.junit_path:
            click.echo(f"JUnit XML: {self.junit_path}")
        github(
            summary or (lambda: step_summary(None, results, note)),
            (annotations or (lambda: GitHubAnnotations(results).render_checks()))
            if self.annotations
            else None,
        )
        return gate_exit_code(results, self.inconclusive)

    def not_judged(self, exc: TcdoctorError, target: str | None) -> None:
        """The JUnit file (one testcase with the error), the step summary and one ::error for a
        gate that ended in an error; a file that cannot be written is a warning, the error stays."""
        from ..checks.outcome import error_result
        from ..render.github import GitHubAnnotations, step_summary
        from ..render.junit import JUnitRenderer
        from ..render.write import write_text

        results = [error_result("tcdoctor check", exc.message)]
        if self.junit_path:
            xml = JUnitRenderer(results, self.links).render_target(target)
            try:
                write_text(self.junit_path, xml)
            except TcdoctorError as err:
                click.echo(f"tcdoctor: warning: {err.message}", err=True)
        github(
            lambda: step_summary(None, results),
            (lambda: GitHubAnnotations(results).render_checks()) if self.annotations else None,
        )
