"""The parent's last step: the children's phase events become a Report, and the report gets its verdict.

Each phase's fill() (its declaration in report/phases/) puts its phase into the report's sections, or
says "not measured (why)"; each experiment child's row (a strategy, a fix, an ablation backend) goes
to the report list its spec names (`Spec.section`, the spec travels in the child's events); then the
verdict.
"""

from __future__ import annotations

import datetime as _dt

from ..experiments import fixes
from ..experiments.cold_plan import ExperimentPlan
from ..experiments.specs import DYNAMIC_SETTINGS, REMEDY_SETTINGS, Spec
from ..report import phases
from ..report.events import Event
from ..report.model import SCHEMA_VERSION, ErrorEntry, PhaseStatus, Report
from ..report.sections import (
    FixRow,
    NotTried,
    StrategyRow,
)
from ..verdict import judge, tried
from ..version import __version__


def assemble(target: str, options: dict, events: list[Event], failures: list[dict]) -> Report:
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
    data.update({sec: {} for sec in phases.SECTIONS}, errors=[])
    done: dict[str, dict] = {}
    strategy_failures: list[dict] = []
    for ev in events:
        phase, kind = ev.phase, ev.event
        if kind == "start":
            data["phases"][phase] = PhaseStatus.of(status="started")
        elif kind == "done":
            data["phases"][phase] = PhaseStatus.of(status="ok", seconds=ev.seconds)
            done[phase] = ev.data or {}
        elif kind == "skipped":
            data["phases"][phase] = PhaseStatus.of(status="skipped", why=ev.why)
        elif kind == "failed" and ev.spec is not None:  # an experiment that failed: a finding
            data["phases"][phase] = PhaseStatus.of(status="failed")
            key = Spec.from_dict(ev.spec).key
            strategy_failures.append({"strategy": key, "message": ev.message, "where": ev.where})
        elif kind == "failed":
            data["phases"][phase] = PhaseStatus.of(status="failed")
            data["errors"].append(ErrorEntry.of(phase=phase, message=ev.message, where=ev.where))
    for f in map(ErrorEntry.from_dict, failures):
        data["errors"].append(f)
        if f.phase in data["phases"]:
            data["phases"][f.phase].status = "failed"

    for phase in phases.PHASES:
        if phase.name in done:
            phase.fill(data, done[phase.name])
    if "serving" in done:  # the serving section (run/serving/): absent without a traffic
        data["serving"] = done["serving"]
    rows = _experiment_rows(done)
    plan = ExperimentPlan.from_data(done.get("plan"))  # empty when the cold child planned nothing
    # the main and eager rows from the sections as the phases filled them (before phases.derive)
    data["strategies"] = _strategies(Report.from_dict(data), done, plan, rows, strategy_failures)
    _remedies(data, done, plan, rows, strategy_failures)

    phases.derive(data)
    # every phase that did not finish says why, those that fill part of another phase's section
    # (no sections of their own: memory_graphs, drift) included
    for phase in phases.PHASES:
        st = data["phases"].get(phase.name)
        if not (st and st.status == "ok"):
            phase.not_measured(data, phase.sections, _why(phase.name, st, data["errors"]))
    report = Report.from_dict(data)
    _tried(report, done, rows)
    judge(report)
    return report


def _experiment_rows(done: dict[str, dict]) -> dict[str, list[dict]]:
    """Each experiment child's row (its done data carries its spec), by the report section the spec
    names, in the order they finished."""
    rows: dict[str, list[dict]] = {}
    for d in done.values():
        if "spec" in d:
            rows.setdefault(Spec.from_dict(d["spec"]).section, []).append(d)
    return rows


def _tried(report: Report, done: dict, rows: dict[str, list[dict]]) -> None:
    """Fix and ablation rows: from their children, then the shape/region fixes the strategy rows show.
    First every row measured in one process gets its decision interval (the spread between the
    headline's processes in it: verdict/tried.py), and each fix's outcome is worded from it."""
    report.fixes = [FixRow.from_dict(v) for v in rows.get("fixes", [])]
    tried.attach_decision_intervals(report)
    for row in report.fixes:
        fixes.reword(row)
    report.fixes += tried.from_strategies(report)
    report.fixes_not_tried = _untried(done, remedies=False)  # remedies: in compile.remedies
    tried.attach_gains(report)
    report.ablation = tried.ablation_layer(
        report, [StrategyRow.from_dict(v) for v in rows.get("ablation", [])]
    )


def main_row(r: Report, name: str, source: str) -> StrategyRow:
    """The main analysis as one row of a strategy table, so it is never compiled a second time."""
    rt, c, m = r.runtime, r.compile, r.memory
    return StrategyRow(
        name=name,
        source=source,
        first_call_s=c.first_call_s,
        median_s=rt.compiled.median_s,
        eager_median_s=rt.eager.median_s,
        speedup=rt.speedup,
        speedup_ci=rt.speedup_ci,
        samples=rt.samples,
        peak_bytes=m.compiled_peak_bytes,
        eager_peak_bytes=m.eager_peak_bytes,
        first_call_peak_bytes=m.compiled_first_call_peak_bytes,
        held_bytes=m.compiled_held_bytes,
        eager_held_bytes=m.eager_held_bytes,
        numerics_passed=r.numerics.passed,
        max_abs_err=r.numerics.max_abs_err,
        graph_breaks=r.graph_breaks.count,
        guards=r.guards.count,
        cache=c.cache,
        cudagraphs=c.cudagraphs or None,
        note=c.cudagraphs.skipped_all if c.cudagraphs else None,
    )


def eager_row(r: Report) -> StrategyRow:
    """Eager as the first row of a strategy table (the baseline every row is timed against): the
    main analysis's eager figures, its first call and memory included (the benchmark article's
    table has eager's initial step beside each mode's)."""
    eager, m = r.runtime.eager.median_s, r.memory
    return StrategyRow(
        name="eager",
        source="main analysis",
        median_s=eager,
        eager_median_s=eager,
        speedup=1.0 if eager is not None else None,
        first_call_s=r.compile.eager_first_call_s,
        first_call_peak_bytes=m.eager_first_call_peak_bytes,
        held_bytes=m.eager_held_bytes,
        peak_bytes=m.eager_peak_bytes,
        baseline=True,
        note="baseline: nothing compiled",
    )


def _strategies(
    seen: Report,
    done: dict,
    plan: ExperimentPlan,
    rows: dict[str, list[dict]],
    failures: list[dict],
) -> dict:
    """The strategies section: the plan, each strategy child's row with the main analysis's beside it."""
    out: dict = {
        "planned": [s.to_dict() for s in plan.specs],
        "failed": failures,
        "not_run": [],
        "modes": [],
        "training": [],
        "dynamic": [],
        "regions": None,
    }
    if any(s.section == "modes" for s in plan.specs):
        mode = seen.options.get("mode") or "default"
        out["modes"] = [
            eager_row(seen),
            main_row(seen, mode, "main analysis"),
            *rows.get("modes", []),
        ]
    if (seen.environment.get("workload") or {}).get("kind") == "train":
        out["step_form"] = (done.get("eager") or {}).get("step_form")
        main = main_row(seen, "step", "main analysis")
        out["training"] = [eager_row(seen), main, *rows.get("training", [])]
        if seen.options.get("training_ways") is False:
            out["not_run"].append(
                {
                    "strategy": "train: the ways other than the whole step",
                    "why": "--no-training-ways (--training-ways compares them with the whole step)",
                }
            )
    auto = (done.get("recompiles") or {}).get("automatic_row")  # strategies.main_is_automatic
    order = {name: i for i, name in enumerate(DYNAMIC_SETTINGS)}
    out["dynamic"] = sorted(
        rows.get("dynamic", []) + ([auto] if auto else []),
        key=lambda r: order.get(r.get("name"), len(order)),
    )
    out["regions"] = next(iter(rows.get("regions", [])), None)
    return out


def _remedies(
    data: dict, done: dict, plan: ExperimentPlan, rows: dict[str, list[dict]], failures: list[dict]
) -> None:
    """compile.remedies: the remedy children's rows, what was not tried and why, the other settings."""
    section = data["compile"].get("remedies") or {}
    if not (rows.get("remedies") or plan.remedies_not_tried or section):
        return  # a report of a run that planned nothing about them (the in-process API)
    section["rows"] = rows.get("remedies", [])
    section["not_tried"] = list(plan.remedies_not_tried)
    section["not_tried"] += [
        {"remedy": Spec.from_dict(n.spec).label, "why": n.why}
        for n in _untried(done, remedies=True)
    ]
    section["settings"] = [dict(s) for s in REMEDY_SETTINGS]
    section["failed"] = [f for f in failures if str(f.get("strategy")).startswith("remedy:")]
    data["compile"]["remedies"] = section


def _untried(done: dict, remedies: bool) -> list[NotTried]:
    """The experiments the parent left untried (its "fixes_not_tried" phase): the remedies, or the rest."""
    rows = [NotTried.from_dict(n) for n in done.get("fixes_not_tried", {}).get("not_tried", [])]
    return [n for n in rows if (Spec.from_dict(n.spec).section == "remedies") is remedies]


def _why(phase: str, status: PhaseStatus | None, errors: list[ErrorEntry]) -> str:
    if status is None:
        return f"phase '{phase}' did not run"
    if status.status == "skipped":
        return status.why or "skipped"
    for e in errors:
        if e.phase == phase:
            return f"phase '{phase}' failed: {e.message}"
    return f"phase '{phase}' did not finish"
