"""The Report: one versioned, JSON-serialisable result that every renderer reads.

Probes stream phase events; `run/assemble.py` turns them into the report's sections. This module
imports only the report's own data (sections, JSON encoding): the verdict, the renderers and the
notebook hook (api.py) read it from above. A section
that could not be measured keeps its keys with null values and says why in `not_measured`.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import ReportError
from .encoding import Document
from .keyed import Keyed
from .record import mismatch
from .sections import (
    Ablation,
    CompileTime,
    Distributed,
    FixRow,
    GraphBreaks,
    Graphs,
    Guards,
    Memory,
    NotTried,
    Numerics,
    Profile,
    Recompiles,
    Runtime,
    Serving,
    Strategies,
    TorchTrace,
    Verdict,
)

SCHEMA_VERSION = 1


@dataclass
class PhaseStatus(Keyed):
    """How one phase of the run ended (run/assemble.py): started (and no more), ok with its
    seconds, skipped with why, or failed (the error is in `Report.errors`). Keyed: each status
    writes only its own keys, as it always has."""

    status: str | None = None
    seconds: float | None = None
    why: str | None = None


@dataclass
class ErrorEntry(Keyed):
    """A phase that failed (`Report.errors`, run/assemble.py): its phase, its one-line message and
    where (a `userframes` where dict); for a process that died, the tail of its output, and in a
    distributed run the rank. Keyed: each entry writes the keys it was given, as it always has."""

    phase: str | None = None
    message: str | None = None
    where: dict[str, Any] | None = None
    rank: int | None = None
    output_tail: str | None = None


@dataclass
class Report(Document):
    """One analysis: typed sections (tcdoctor/report/sections/), saved and loaded as JSON.

    `assemble` builds it from the children's phase events; the verdict, `check`, `diff` and every
    renderer read its attributes. A section that was not measured says why in `not_measured`.
    """

    schema_version: int = SCHEMA_VERSION
    tool: dict[str, Any] = field(default_factory=dict)
    created: str | None = None
    target: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    phases: dict[str, PhaseStatus] = field(default_factory=dict)
    graphs: Graphs = field(default_factory=Graphs)
    graph_breaks: GraphBreaks = field(default_factory=GraphBreaks)
    recompiles: Recompiles = field(default_factory=Recompiles)
    guards: Guards = field(default_factory=Guards)
    compile: CompileTime = field(default_factory=CompileTime)
    runtime: Runtime = field(default_factory=Runtime)
    memory: Memory = field(default_factory=Memory)
    numerics: Numerics = field(default_factory=Numerics)
    profile: Profile = field(default_factory=Profile)
    errors: list[ErrorEntry] = field(default_factory=list)
    strategies: Strategies = field(default_factory=Strategies)
    fixes: list[FixRow] = field(default_factory=list)
    fixes_not_tried: list[NotTried] = field(default_factory=list)
    ablation: Ablation | None = None
    verdict: Verdict = field(default_factory=Verdict)
    distributed: Distributed | None = None  # a --nproc run's ranks (report/distributed.py)
    torch_trace: TorchTrace | None = None  # TORCH_TRACE logs and tlparse (run/tlparse.py)
    serving: Serving | None = None  # the traffic replayed (run/serving/); absent without one

    OMIT_NONE = ("distributed", "torch_trace", "serving")
    REQUIRED = ("schema_version",)

    @classmethod
    def upgrade(cls, d: dict) -> dict:
        # The guard share is taken of the compiled median the timing phase measured.
        guards, rt = d.get("guards"), d.get("runtime")
        if isinstance(guards, dict) and isinstance(rt, dict) and guards.get("call_s") is None:
            median = (rt.get("compiled") or {}).get("median_s")
            if median is not None:
                guards = d["guards"] = dict(guards)
                guards["call_s"] = median
        return d

    @classmethod
    def load(cls, path: str) -> Report:
        """A saved report, its values checked against the schema (`report_schema`) first: a wrong
        type is a ReportError naming the key's path and what it should be, never a crash later."""
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if not isinstance(data, dict) or "schema_version" not in data:
            raise ReportError(f"{path} is not a tcdoctor report (no schema_version)")
        version = data["schema_version"]
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
            raise ReportError(
                f"{path} has schema_version {data['schema_version']}; "
                f"this tcdoctor reads up to {SCHEMA_VERSION}"
            )
        wrong = mismatch(report_schema(), data)
        if wrong:
            raise ReportError(f"{path} is not a valid tcdoctor report: {wrong}")
        try:
            return cls.from_dict(data)
        except (TypeError, AttributeError, ValueError) as exc:
            raise ReportError(f"{path} does not have a tcdoctor report's shape ({exc})") from None


SCHEMA_FILE = "report.schema.json"  # shipped beside this module (package data)


@functools.lru_cache(maxsize=1)
def report_schema() -> dict:
    """The report's JSON Schema, generated from the section classes' annotations: what `load`
    checks a file against, and what the shipped `report.schema.json` must equal."""
    return Report.json_schema(f"tcdoctor report (schema_version {SCHEMA_VERSION})")


def schema_text() -> str:
    """`report_schema()` as the shipped file holds it (and `tcdoctor schema` prints it)."""
    return json.dumps(report_schema(), indent=2, ensure_ascii=False) + "\n"


def shipped_schema_text() -> str:
    """The schema file in the installed package."""
    return importlib.resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
