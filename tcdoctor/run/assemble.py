"""The parent's last step: the children's phase events become a Report, and the report gets its verdict.

Each registry entry's fill() (report/phases.py) puts its phase into the report's sections, or
says "not measured (why)"; strategy, fix and ablation rows become typed rows; then the verdict.
"""

from __future__ import annotations

import datetime as _dt

from ..report.model import SCHEMA_VERSION, Report
from ..report.phases import PHASES, SECTIONS, derive
from ..report.sections import (
    FixRow,
    StrategyRow,
)
from ..verdict import judge, tried
from ..version import __version__


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
    judge(report)
    return report


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


def main_row(data: dict, name: str, source: str) -> dict:
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
        out["modes"] = [main_row(data, data["options"].get("mode") or "default", "main analysis")]
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
        out["training"] = [eager, main_row(data, "step", "main analysis")] + [
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
