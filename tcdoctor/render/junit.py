"""JUnit XML of `tcdoctor check`: one `<testcase>` per check, for the test-result readers of CI
systems (GitLab's `artifacts:reports:junit`, Jenkins' junit step, GitHub reporter actions).

The layout is the common denominator those readers accept (the Jenkins/Ant JUnit schema): one
`<testsuites>` holding one `<testsuite>` whose `<properties>` carry the report's verdict and
links; each check a `<testcase name=... classname="tcdoctor.check">` whose `<system-out>` says
the figure it was judged on and the limit, and a failed check a `<failure message=...>` with the
reason. Pitfalls: a testcase's name stays the check's name alone (readers track a test's history by
its name, and the figure changes every run); `<testcase>` takes no `<properties>` in that schema,
so the figure and limit go in its output; XML 1.0 forbids most control characters, which PyTorch
messages can hold, so they are dropped; ElementTree escapes the rest. `time` is 0: checks are
judged on a finished report and take no time of their own.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .. import units
from ..report.check import CheckResult
from .base import Renderer

if TYPE_CHECKING:
    from ..report.model import Report

CLASSNAME = "tcdoctor.check"
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(s: object) -> str:
    return _NOT_XML.sub("", str(s))


def _figure_and_limit(r: CheckResult) -> str:
    return f"figure: {r.figure}\nlimit: {r.limit}\n{'PASS' if r.passed else 'FAIL'}: {r.reason}"


class JUnitRenderer(Renderer):
    """The checks of one `tcdoctor check` run as JUnit XML; `links` are named paths or URLs (the
    report checked, the baseline) added to the suite's properties with the verdict."""

    name = "junit"

    def __init__(self, results: Sequence[CheckResult], links: Mapping[str, str] | None = None):
        self.results = list(results)
        self.links = dict(links or {})

    def _properties(self, report: Report) -> dict[str, str]:
        props = {
            "verdict": str(report.verdict.decision),
            "verdict_text": units.decision_text(report.verdict.decision),
            "target": str(report.target),
            "torch": str(report.environment.get("torch")),
            "tcdoctor": str(report.tool.get("version")),
        }
        props.update({f"link.{k}": v for k, v in self.links.items() if v})
        return props

    def render(self, report: Report) -> str:
        failures = str(sum(not r.passed for r in self.results))
        counts = {"tests": str(len(self.results)), "failures": failures, "errors": "0"}
        root = ET.Element("testsuites", {"name": "tcdoctor check", **counts, "time": "0"})
        suite = ET.SubElement(
            root,
            "testsuite",
            {"name": _text(f"tcdoctor check: {report.target}"), **counts, "skipped": "0"},
        )
        suite.set("time", "0")
        props = ET.SubElement(suite, "properties")
        for k, v in self._properties(report).items():
            ET.SubElement(props, "property", {"name": k, "value": _text(v)})
        for r in self.results:
            case = ET.SubElement(
                suite, "testcase", {"name": _text(r.name), "classname": CLASSNAME, "time": "0"}
            )
            if not r.passed:
                failure = ET.SubElement(
                    case, "failure", {"message": _text(r.reason), "type": "check failed"}
                )
                failure.text = _text(f"{r.name}: {r.reason}")
            ET.SubElement(case, "system-out").text = _text(_figure_and_limit(r))
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
