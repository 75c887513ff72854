"""JUnit XML of `tcdoctor check`: one `<testcase>` per check, for the test-result readers of CI
systems (GitLab's `artifacts:reports:junit`, Jenkins' junit step, GitHub reporter actions).

The layout is the common denominator those readers accept (the Jenkins/Ant JUnit schema): one
`<testsuites>` holding one `<testsuite>` whose `<properties>` carry the report's verdict and
links; each check a `<testcase name=... classname=...>` whose `<system-out>` says the figure it was
judged on and the limit; a failed check has a `<failure message=...>` with the reason (and, for
graph breaks and recompiles, each finding on its own line), a check that could not be judged an
`<error message=...>` (a tool problem: an unusable baseline, a missing file, `build()` raising),
an inconclusive check (its interval straddles the limit) a `<skipped message=...>` with the reason
(how `--inconclusive` counts it included), counted in the suite's `skipped`, neither a failure nor
a pass: readers show it apart, and the gate's exit code (5, or 0 with `--inconclusive pass`) says
how CI took it.

Pitfalls: readers key a test's history by classname + name (Jenkins), so the classname comes from
the target (`tcdoctor.check.models.mymodel.build` for `models/mymodel.py:build`, relative to the
workspace) and the name is the check's name alone (the figure changes every run): two models'
files merged keep distinct ids. Jenkins' schema (the xUnit plugin's junit-10.xsd, which it
validates against) allows no `file` or `line` on a `<testcase>`, only on the `<testsuite>`: the
target's file goes there (relative to the workspace), and each finding is its own line of the
failure text as `path:line message`, where GitHub reporter actions (mikepenz/action-junit-report
falls back to the suite's file and reads the line from the text) find it; tcdoctor's own
`::error file=…,line=…` annotations carry both exactly. `<testcase>` takes no `<properties>` in
that schema, so the figure and limit go in its output; XML
1.0 forbids most control characters, which PyTorch messages can hold, so they are dropped;
ElementTree escapes the rest. `time` is 0: checks are judged on a finished report and take no time
of their own.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .. import units
from ..checks.outcome import CheckResult
from ..outcomes import Status
from .base import Renderer
from .github import located, workspace

if TYPE_CHECKING:
    from ..report.model import Report
    from ..report.sweep import Sweep

CLASSNAME = "tcdoctor.check"
# a check's element under its <testcase> and the element's type (a passed check has none)
ELEMENTS = {
    Status.ERROR: ("error", "not judged"),
    Status.INCONCLUSIVE: ("skipped", "inconclusive"),
    Status.FAIL: ("failure", "check failed"),
}
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(s: object) -> str:
    return _NOT_XML.sub("", str(s))


def _figure_and_limit(r: CheckResult) -> str:
    return f"figure: {r.figure}\nlimit: {r.limit}\n{r.status}: {r.reason}"


def _dotted(path: str) -> list[str]:
    parts = [p for p in re.split(r"[\\/]+", path) if p and p != "."]
    return ["_" if p == ".." else p.replace(".", "_") for p in parts]


def target_file(target: str | None, root: str) -> str | None:
    """The target's file, relative to the workspace when under it, else as given."""
    path = (target or "").rpartition(":")[0]
    if not path:
        return None
    if os.path.isabs(path):
        rel, _ = located(path, 1, root)
        return rel or path
    return os.path.normpath(path).replace(os.sep, "/")


def classname(target: str | None, root: str | None = None) -> str:
    """`tcdoctor.check.<target's path without .py, slashes as dots>.<function>`: a model's checks
    have their own ids, the same on every checkout (the path is the workspace's relative one)."""
    path = target_file(target, os.path.abspath(root or workspace()))
    func = (target or "").rpartition(":")[2]
    if not path or not func:
        return CLASSNAME
    path = path[:-3] if path.endswith(".py") else path
    return ".".join([CLASSNAME, *_dotted(path), func])


class JUnitRenderer(Renderer):
    """The checks of one `tcdoctor check` run as JUnit XML; `links` are named paths or URLs (the
    report checked, the baseline) added to the suite's properties with the verdict. `render(report)`
    for a report's checks, `render_target(target)` when there is no report (the gate failed before
    one: a missing file, `build()` raising), `render_sweep(sweep, where)` for `check --sweep`."""

    name = "junit"

    def __init__(
        self,
        results: Sequence[CheckResult],
        links: Mapping[str, str] | None = None,
        root: str | None = None,
    ):
        self.results = list(results)
        self.links = {k: v for k, v in (links or {}).items() if v}
        self.root = os.path.abspath(root or workspace())

    def render(self, report: Report) -> str:
        props = {
            "verdict": str(report.verdict.decision),
            "verdict_text": units.decision_text(report.verdict.decision),
            "target": str(report.target),
            "torch": str(report.environment.get("torch")),
            "tcdoctor": str(report.tool.get("version")),
        }
        return self._suite(f"tcdoctor check: {report.target}", report.target, props)

    def render_target(self, target: str | None) -> str:
        """No report (the gate ended before one): the suite named by the target, the saved report
        or the sweep given, whichever there is."""
        from ..version import __version__

        named = target or self.links.get("report") or self.links.get("sweep") or "?"
        props = {"tcdoctor": __version__, **({"target": target} if target else {})}
        return self._suite(f"tcdoctor check: {named}", target, props)

    def render_sweep(self, sweep: Sweep, where: str) -> str:
        s = sweep.summary
        props = {
            "sweep": where,
            "targets": str(s["targets"]),
            "pass_rate": str(s["pass_rate"]),
            "torch": str(sweep.torch),
            "tcdoctor": str(sweep.tool.get("version")),
        }
        cls = ".".join([CLASSNAME, "sweep", *_dotted(where.rstrip("/\\") or "sweep")])
        return self._suite(f"tcdoctor check --sweep: {where}", None, props, cls)

    def _suite_file(self, target: str | None) -> str | None:
        """The file a reader annotates: the first finding's when it lies under the workspace, else
        the target's own (relative paths only: an absolute one would not resolve on the runner)."""
        for r in self.results:
            file, _ = located(r.file, r.line, self.root)
            if file:
                return file
        file = target_file(target, self.root) if target else None
        return file if file and not os.path.isabs(file) else None

    def _suite(
        self, title: str, target: str | None, props: dict[str, str], cls: str | None = None
    ) -> str:
        cls = cls or classname(target, self.root)
        failures = str(sum(r.failed for r in self.results))
        errors = str(sum(r.error for r in self.results))
        skipped = str(sum(r.inconclusive and not r.error for r in self.results))
        counts = {"tests": str(len(self.results)), "failures": failures, "errors": errors}
        root = ET.Element("testsuites", {"name": "tcdoctor check", **counts, "time": "0"})
        suite = ET.SubElement(
            root, "testsuite", {"name": _text(title), **counts, "skipped": skipped}
        )
        suite.set("time", "0")
        file = self._suite_file(target)
        if file:
            suite.set("file", _text(file))
        properties = ET.SubElement(suite, "properties")
        props.update({f"link.{k}": v for k, v in self.links.items()})
        for k, v in props.items():
            ET.SubElement(properties, "property", {"name": k, "value": _text(v)})
        for r in self.results:
            attrs = {"name": _text(r.name), "classname": _text(cls), "time": "0"}
            case = ET.SubElement(suite, "testcase", attrs)
            if r.status in ELEMENTS:
                tag, kind = ELEMENTS[r.status]
                el = ET.SubElement(case, tag, {"message": _text(r.reason), "type": kind})
                details = r.details if r.status == Status.FAIL else ()
                el.text = _text("\n".join([f"{r.name}: {r.reason}", *details]))
            ET.SubElement(case, "system-out").text = _text(_figure_and_limit(r))
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
