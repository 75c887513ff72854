"""GitHub Actions output: workflow-command annotations and the job's step summary.

When `GITHUB_ACTIONS=true`, `analyze` and `check` print one annotation per finding on stdout, where
the runner reads workflow commands: `::warning file=F,line=L,title=T::message` for each graph break
and each recompile, `::error title=T::message` for each failed check, `::warning` for each
inconclusive one (its interval straddles the limit: not shown failing, not shown passing). A finding in a file under the
workspace (`GITHUB_WORKSPACE`, else the current folder) is located by its path relative to it, so
the annotation lands on that line of the pull request's diff; one elsewhere (a library, a folder
outside the checkout) keeps its location in the message instead. The Markdown report (with the
checks' table for `check`) is appended to the file `GITHUB_STEP_SUMMARY` names.

Pitfalls (GitHub's workflow-command rules): the message escapes `%`, `\\r` and `\\n` (%25, %0D,
%0A) and a property value also `:` and `,` (%3A, %2C), else a reason holding a newline or a comma
ends the command early; GitHub shows at most 10 annotations of each kind (error, warning, notice)
per step and drops the rest without a word, so after 10 of a kind one `::notice` says how many more
are in the report (`MAX_PER_KIND`); the order is that of the report (failed checks first, then
breaks by cost, then recompiles).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..checks.outcome import CheckResult
from .base import Renderer
from .markdown import MarkdownRenderer

if TYPE_CHECKING:
    from ..report.model import Report
    from ..report.sections import GraphBreak, Recompile
    from ..report.sweep import Sweep


def escape_data(s: object) -> str:
    """A workflow command's message, escaped as GitHub's runner unescapes it."""
    return str(s).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: object) -> str:
    """A workflow command's property value (file, title), escaped."""
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **props: object) -> str:
    """'::kind k=v,k=v::message' with every part escaped; None-valued properties left out."""
    given = ",".join(f"{k}={escape_property(v)}" for k, v in props.items() if v is not None)
    return f"::{kind}{' ' + given if given else ''}::{escape_data(message)}"


MAX_PER_KIND = 10  # what GitHub shows of each annotation kind per step


def in_github_actions(env: Mapping[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get("GITHUB_ACTIONS") == "true"


def workspace(env: Mapping[str, str] | None = None) -> str:
    """The folder annotation paths are relative to: GITHUB_WORKSPACE, else the current folder."""
    return (os.environ if env is None else env).get("GITHUB_WORKSPACE") or os.getcwd()


def located(file: str | None, line: int | None, root: str) -> tuple[str | None, int | None]:
    """(path relative to the workspace `root`, line), or (None, None) for a file outside it (or
    none: "<string>"). A relative `file` is taken as relative to the current folder."""
    if not file or not line or file.startswith("<"):  # "<string>": no file to point at
        return None, None
    path, root = os.path.abspath(file), os.path.abspath(root)
    if os.path.commonpath([path, root]) != root:
        return None, None
    return os.path.relpath(path, root).replace(os.sep, "/"), int(line)


def capped(lines: Sequence[str], limit: int = MAX_PER_KIND) -> list[str]:
    """The annotations GitHub will show: `limit` of each kind, then for each kind cut one notice
    saying how many more the report holds (GitHub would drop them without a word)."""
    out, shown, cut = [], {}, {}
    for line in lines:
        kind = line[2:].split(" ", 1)[0].split("::", 1)[0]
        shown[kind] = shown.get(kind, 0) + 1
        if shown[kind] <= limit:
            out.append(line)
        else:
            cut[kind] = cut.get(kind, 0) + 1
    for kind, n in cut.items():
        what = "annotation" if n == 1 else "annotations"
        out.append(
            command(
                "notice",
                f"{n} more {kind} {what} not shown: GitHub shows {limit} of each kind per step; "
                "every finding is in the report (the step summary, the HTML and JSON reports)",
                title=f"tcdoctor: {n} more {kind}s",
            )
        )
    return out


class GitHubAnnotations(Renderer):
    """The report's findings and the checks that failed or could not be judged as workflow
    commands, one line each, capped as GitHub shows them (`capped`)."""

    name = "github"

    def __init__(self, results: Sequence[CheckResult] = (), root: str | None = None):
        self.results = list(results)
        self.root = os.path.abspath(root or workspace())

    def _located(self, file: str | None, line: int | None) -> tuple[str | None, int | None]:
        return located(file, line, self.root)

    def _break(self, f: GraphBreak) -> str:
        file, line = self._located(f.file, f.line)
        parts = [f"Graph break: {f.reason}"]
        if file is None and f.file:
            parts[0] += f" (at {f.where})"
        if f.origin and f.origin != "user":
            parts.append(f"In {f.origin_text or f.origin} code, reached from this line.")
        parts += [f"Hint: {h}" for h in (f.hints or [])[:2]]
        if f.doc_url:
            parts.append(f"More: {f.doc_url}")
        return command(
            "warning", "\n".join(parts), file=file, line=line, title="tcdoctor: graph break"
        )

    def _recompile(self, r: Recompile) -> str:
        file, line = self._located(r.file, r.line)
        text = f"Recompile of {r.function} on {r.variant}: {r.reason}"
        return command("warning", text, file=file, line=line, title="tcdoctor: recompile")

    def _checks(self) -> list[str]:
        out = []
        for r in self.results:
            if r.passed:
                continue
            file, line = self._located(r.file, r.line)
            if r.inconclusive and not r.error:
                title = f"tcdoctor check inconclusive: {r.name}"
                out.append(command("warning", r.reason, file=file, line=line, title=title))
                continue
            title = f"tcdoctor check {'error' if r.error else 'failed'}: {r.name}"
            out.append(command("error", r.reason, file=file, line=line, title=title))
        return out

    def render(self, report: Report) -> str:
        lines = self._checks()
        lines += [self._break(f) for f in report.graph_breaks.unique]
        lines += [self._recompile(r) for r in report.recompiles.events]
        return "\n".join(capped(lines))

    def render_checks(self) -> str:
        """The checks alone (no report: `check --sweep`, or a gate that failed before one)."""
        return "\n".join(capped(self._checks()))


def checks_markdown(results: Sequence[CheckResult], note: str | None = None) -> str:
    """The checks as a Markdown table (the step summary's head for `check`: render/outline.py
    `checks_page`)."""
    from .outline import checks_page

    return MarkdownRenderer().page(checks_page(results, note)) + "\n"


def step_summary(
    report: Report | None, results: Sequence[CheckResult] = (), note: str | None = None
) -> str:
    """What `analyze` (no results) or `check` appends to GITHUB_STEP_SUMMARY; without a report
    (the gate failed before one) the checks' table alone."""
    head = checks_markdown(results, note) if results else ""
    if report is None:
        return head
    return head + MarkdownRenderer().render(report).rstrip("\n") + "\n\n"


def sweep_step_summary(sweep: Sweep, results: Sequence[CheckResult], note: str | None) -> str:
    """What `check --sweep` appends to GITHUB_STEP_SUMMARY: the checks, then the overview."""
    overview = MarkdownRenderer().render_sweep(sweep)
    return checks_markdown(results, note) + overview.rstrip() + "\n\n"


def write_step_summary(text: str, env: Mapping[str, str] | None = None) -> str | None:
    """Append `text` to the file GITHUB_STEP_SUMMARY names; its path, or None when unset."""
    path = (os.environ if env is None else env).get("GITHUB_STEP_SUMMARY")
    if not path:
        return None
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)
    return path
