"""The Report: one versioned, JSON-serialisable result that every renderer reads.

Probes stream phase events; `assemble` turns them into the report's sections. A section
that could not be measured keeps its keys with null values and says why in `not_measured`.
"""

from __future__ import annotations

import copy
import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Any

from . import __version__, tried
from .distributed import extend_verdict
from .phases import PHASES, SECTIONS, derive
from .results import (
    Ablation,
    CompileTime,
    FixRow,
    GraphBreaks,
    Graphs,
    Guards,
    Memory,
    Numerics,
    Recompiles,
    Record,
    Runtime,
    Strategies,
    StrategyRow,
    Verdict,
)
from .run.stream import dumps
from .verdict import decide

SCHEMA_VERSION = 1


@dataclass
class Report(Record):
    """One analysis: typed sections (tcdoctor/results.py), saved and loaded as JSON.

    `assemble` builds it from the children's phase events; the verdict, `check`, `diff` and every
    renderer read its attributes. A section that was not measured says why in `not_measured`.
    """

    schema_version: int = SCHEMA_VERSION
    tool: dict[str, Any] = field(default_factory=dict)
    created: str | None = None
    target: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    phases: dict[str, dict] = field(default_factory=dict)
    graphs: Graphs = field(default_factory=Graphs)
    graph_breaks: GraphBreaks = field(default_factory=GraphBreaks)
    recompiles: Recompiles = field(default_factory=Recompiles)
    guards: Guards = field(default_factory=Guards)
    compile: CompileTime = field(default_factory=CompileTime)
    runtime: Runtime = field(default_factory=Runtime)
    memory: Memory = field(default_factory=Memory)
    numerics: Numerics = field(default_factory=Numerics)
    profile: dict[str, Any] = field(default_factory=dict)
    errors: list[dict] = field(default_factory=list)
    strategies: Strategies = field(default_factory=Strategies)
    fixes: list[FixRow] = field(default_factory=list)
    fixes_not_tried: list[dict] = field(default_factory=list)
    ablation: Ablation | None = None
    verdict: Verdict = field(default_factory=Verdict)
    distributed: dict[str, Any] | None = None  # a --nproc run's ranks (tcdoctor/distributed.py)
    torch_trace: dict[str, Any] | None = None  # TORCH_TRACE logs and tlparse (tcdoctor/tlparse.py)

    OMIT_NONE = ("distributed", "torch_trace")

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

    def to_json(self, indent: int | None = 2) -> str:
        return dumps(self.to_dict(), indent=indent)

    def save(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_json())

    @classmethod
    def load(cls, path: str) -> Report:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if not isinstance(data, dict) or "schema_version" not in data:
            raise ValueError(f"{path} is not a tcdoctor report (no schema_version)")
        if data["schema_version"] > SCHEMA_VERSION:
            raise ValueError(
                f"{path} has schema_version {data['schema_version']}; "
                f"this tcdoctor reads up to {SCHEMA_VERSION}"
            )
        try:
            return cls.from_dict(data)
        except (TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"{path} does not have a tcdoctor report's shape ({exc})") from None

    def _repr_html_(self) -> str:
        from .render.html import render

        return render(self, fragment=True)


def assemble(target: str, options: dict, events: list[dict], failures: list[dict]) -> Report:
    """Build the report from the children's phase events plus what the parent saw fail."""
    data: dict = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "tcdoctor", "version": __version__},
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "target": target,
        "options": options,
        "environment": {},
        "phases": {},
    }
    data.update({sec: {} for sec in SECTIONS}, errors=[])
    done: dict[str, dict] = {}
    strategy_failures: list[dict] = []
    for ev in events:
        phase = ev.get("phase")
        kind = ev.get("event")
        if kind == "start":
            data["phases"][phase] = {"status": "started"}
        elif kind == "done":
            data["phases"][phase] = {"status": "ok", "seconds": ev.get("seconds")}
            done[phase] = ev.get("data") or {}
        elif kind == "skipped":
            data["phases"][phase] = {"status": "skipped", "why": ev.get("why")}
        elif kind == "failed" and str(phase).startswith("strategy:"):
            data["phases"][phase] = {"status": "failed"}
            err = ev.get("error") or {}
            strategy_failures.append(
                {
                    "strategy": phase[len("strategy:") :],
                    "message": err.get("message"),
                    "where": err.get("where"),
                }
            )
        elif kind == "failed":
            data["phases"][phase] = {"status": "failed"}
            err = ev.get("error") or {}
            data["errors"].append(
                {"phase": phase, "message": err.get("message"), "where": err.get("where")}
            )
    for f in failures:
        data["errors"].append(f)
        if f.get("phase") in data["phases"]:
            data["phases"][f["phase"]]["status"] = "failed"

    for phase in PHASES:
        if phase.name in done:
            phase.fill(data, done[phase.name])
    data["strategies"] = _strategies(data, done, strategy_failures)

    derive(data)
    for phase in PHASES:
        st = data["phases"].get(phase.name)
        if phase.sections and not (st and st["status"] == "ok"):
            phase.not_measured(data, phase.sections, _why(phase.name, st, data["errors"]))
    report = Report.from_dict(data)
    _tried(report, done)
    _decide(report)
    return report


def _decide(report: Report, **rules: Any) -> None:
    """The verdict, plus what the tried fixes and the ablation showed (pure: recomputing gives the same)."""
    report.verdict = decide(report, **rules)
    report.verdict.advice += tried.advice(report)
    tried.annotate(report)
    extend_verdict(report)  # a distributed run's reasons and advice (tcdoctor/distributed.py)


def _tried(report: Report, done: dict) -> None:
    """Fix and ablation rows: from their children, then the shape/region fixes the strategy rows show."""
    rows = {k[len("strategy:") :]: v for k, v in done.items() if k.startswith("strategy:")}
    report.fixes = [FixRow.from_dict(v) for k, v in rows.items() if k.startswith("fix:")]
    report.fixes += tried.from_strategies(report)
    report.fixes_not_tried = (done.get("fixes_not_tried") or {}).get("not_tried", [])
    tried.attach_gains(report)
    report.ablation = tried.ablation_layer(
        report, [StrategyRow.from_dict(v) for k, v in rows.items() if k.startswith("ablation:")]
    )


def _main_row(data: dict, name: str, source: str) -> dict:
    """The main analysis as one row of a strategy table, so it is never compiled a second time."""
    rt, c, m, n = data["runtime"], data["compile"], data["memory"], data["numerics"]
    return {
        "name": name,
        "source": source,
        "first_call_s": c.get("first_call_s"),
        "median_s": (rt.get("compiled") or {}).get("median_s"),
        "eager_median_s": (rt.get("eager") or {}).get("median_s"),
        "speedup": rt.get("speedup"),
        "speedup_ci": rt.get("speedup_ci"),
        "samples": rt.get("samples"),
        "peak_bytes": m.get("compiled_peak_bytes"),
        "eager_peak_bytes": m.get("eager_peak_bytes"),
        "numerics_passed": n.get("passed"),
        "max_abs_err": n.get("max_abs_err"),
        "graph_breaks": data["graph_breaks"].get("count"),
        "guards": data["guards"].get("count"),
        "cache": c.get("cache"),
    }


def _strategies(data: dict, done: dict, failures: list[dict]) -> dict:
    plan = (done.get("plan") or {}).get("strategies", [])
    rows = {k[len("strategy:") :]: v for k, v in done.items() if k.startswith("strategy:")}
    out: dict = {
        "planned": plan,
        "failed": failures,
        "not_run": [],
        "modes": [],
        "training": [],
        "dynamic": [],
        "regions": None,
    }
    if any(p["kind"] == "mode" for p in plan):
        out["modes"] = [_main_row(data, data["options"].get("mode") or "default", "main analysis")]
        out["modes"] += [v for k, v in rows.items() if k.startswith("mode:")]
    if (data["environment"].get("workload") or {}).get("kind") == "train":
        rt = data["runtime"]
        eager = {
            "name": "eager",
            "source": "main analysis",
            "median_s": (rt.get("eager") or {}).get("median_s"),
            "eager_median_s": (rt.get("eager") or {}).get("median_s"),
            "speedup": 1.0 if rt.get("eager") else None,
            "speedup_ci": None,
            "first_call_s": None,
            "peak_bytes": data["memory"].get("eager_peak_bytes"),
            "baseline": True,
            "note": "baseline: nothing compiled",
        }
        out["training"] = [eager, _main_row(data, "step", "main analysis")] + [
            v for k, v in rows.items() if k.startswith("train:")
        ]
        if data["options"].get("training_ways") is False:
            out["not_run"].append(
                {
                    "strategy": "train: the ways other than the whole step",
                    "why": "--no-training-ways (--training-ways compares them with the whole step)",
                }
            )
    out["dynamic"] = [v for k, v in rows.items() if k.startswith("dynamic:")]
    out["regions"] = next((v for k, v in rows.items() if k.startswith("regions:")), None)
    return out


def _why(phase: str, status: dict | None, errors: list[dict]) -> str:
    if status is None:
        return f"phase '{phase}' did not run"
    if status["status"] == "skipped":
        return status.get("why") or "skipped"
    for e in errors:
        if e.get("phase") == phase:
            return f"phase '{phase}' failed: {e.get('message')}"
    return f"phase '{phase}' did not finish"


def with_verdict(report: Report, **rules: Any) -> Report:
    """A copy of the report with the verdict recomputed (e.g. another --expected-calls)."""
    out = copy.deepcopy(report)
    _decide(out, **rules)
    return out
