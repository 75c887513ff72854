"""The run's stages as data (tcdoctor/run/stages.py): a single-process and a distributed analysis are
each a list of `Stage` records run by one loop; a stage planted in a test (one record) runs in that
loop and its events reach the report. What the parent tells the warm child is one typed message
(run/spec.py `WarmGo`), the cold child's plan one typed record (experiments/cold_plan.py), and the
plan's loops are generators the launcher drives (experiments/plan.py): the plan never calls the
launcher."""

from __future__ import annotations

import json
import os
import time

import pytest
from conftest import ROOT
from test_regimes_load import _proc

from tcdoctor.experiments import plan
from tcdoctor.experiments.cold_plan import ExperimentPlan
from tcdoctor.experiments.specs import AblationSpec, ConfigFix, ModeSpec
from tcdoctor.options import Options
from tcdoctor.report.events import Event
from tcdoctor.report.processes import sequential
from tcdoctor.run import distributed, launcher
from tcdoctor.run.process import done
from tcdoctor.run.spec import ChildSpecError, WarmGo
from tcdoctor.run.stages import TIME_USED_UP, Run, Stage, Where, check_order, run_stages
from tcdoctor.thresholds import RULES

MLP = os.path.join(ROOT, "samples", "mlp.py") + ":build"
# one cold process, no experiments: the cheapest real analysis
CHEAP = Options(
    backend="eager", threads=1, budget_s=0.3, warm=False, processes=1, fixes=False,
    submodules=False, dynamic=False, compile_remedies=False,
)  # fmt: skip


def test_the_analyses_stage_lists_are_in_order_and_a_wrong_one_is_refused():
    check_order(launcher.STAGES)
    check_order(distributed.STAGES)
    assert [s.name for s in launcher.STAGES][-1] == "report"
    assert {s.where for s in launcher.STAGES} == {Where.PARENT, Where.CHILDREN}
    assert Where.RANKS in {s.where for s in distributed.STAGES}
    nothing = Stage("a", Where.PARENT, lambda run: None)
    with pytest.raises(ValueError, match="listed twice"):
        check_order([nothing, nothing])
    with pytest.raises(ValueError, match="needs a, not listed before it"):
        check_order([Stage("b", Where.PARENT, lambda run: None, needs=("a",)), nothing])


def _run(deadline_in: float = 60.0) -> Run:
    from tcdoctor.checks.questions import Questions
    from tcdoctor.run.progress import Progress

    return Run(MLP, CHEAP, Questions(), "/nowhere", time.monotonic() + deadline_in, Progress(False))


def test_the_loop_runs_each_stage_or_says_why_not():
    """`when` says why a stage does not run; too little of the deadline left is its budget (a stage
    with none, as the report, runs past the deadline too); a stage whose need did not run does not
    run either."""
    order: list[str] = []
    stages = [
        Stage("first", Where.PARENT, lambda run: order.append("first")),
        Stage("off", Where.PARENT, lambda run: order.append("off"), when=lambda run: "turned off"),
        Stage("after off", Where.PARENT, lambda run: order.append("x"), needs=("off",)),
        Stage("late", Where.CHILDREN, lambda run: order.append("late"), min_left_s=5.0),
        Stage("last", Where.PARENT, lambda run: order.append("last"), needs=("first",)),
    ]
    run = _run(deadline_in=-1.0)  # past the deadline
    run_stages(stages, run)
    assert order == ["first", "last"] and run.ran == ["first", "last"]
    assert run.skipped == {
        "off": "turned off",
        "after off": "it needs off, which did not run",
        "late": TIME_USED_UP,
    }


def test_a_planted_stage_runs_in_the_loop_and_its_events_reach_the_report(monkeypatch, tmp_path):
    """One record added to the single-process list (as a new stage is added): it runs after the
    main analysis (it reads the cold child's compile), and the event and the failure it adds
    reach the report the last stage assembles."""
    seen: dict = {}

    def planted(run: Run) -> None:
        seen["compiled"] = done(run.events, "compile") is not None
        seen["before"] = list(run.ran)
        seen["skipped"] = dict(run.skipped)
        run.events.append(Event(event="done", phase="planted", seconds=0.5, data={"n": 1}))
        run.failures.append({"phase": "planted_check", "message": "the planted stage's failure"})

    stage = Stage("planted", Where.PARENT, planted, needs=("main",))
    *others, report = launcher.STAGES
    monkeypatch.setattr(launcher, "STAGES", (*others, stage, report))
    rep, code = launcher.analyze_target(MLP, CHEAP, keep_dir=str(tmp_path))
    # the serving stages' `when`: no traffic, so neither ran (a Generation's runs before the
    # experiments, any other's after them), and each says why
    ran = [s.name for s in others if s.name not in ("generation", "serving")]
    skipped = {"generation": launcher.NOT_GENERATION, "serving": launcher.NO_TRAFFIC}
    assert seen == {"compiled": True, "before": ran, "skipped": skipped}
    assert seen["before"][:4] == ["cache", "main", "timing", "experiments"]
    assert rep.phases["planted"].to_dict() == {"status": "ok", "seconds": 0.5}
    assert "the planted stage's failure" in [e.message for e in rep.errors]
    assert code == 4 and rep.compile.cold_s is not None  # the rest of the analysis as ever


def test_the_warm_go_message_is_typed_and_refuses_what_it_does_not_know():
    go = WarmGo(True, 1e-3, (ConfigFix("x"), AblationSpec("aot_eager")), 20.0)
    again = WarmGo.from_dict(json.loads(json.dumps(go.to_dict())))
    assert again == go and isinstance(again.experiments[0], ConfigFix)
    with pytest.raises(ChildSpecError, match="unknown field"):
        WarmGo.from_dict({**go.to_dict(), "extra": 1})
    with pytest.raises(ChildSpecError, match="missing field"):
        WarmGo.from_dict({k: v for k, v in go.to_dict().items() if k != "fix_budget_s"})
    with pytest.raises(ChildSpecError, match="experiments"):
        WarmGo.from_dict({**go.to_dict(), "experiments": [{"kind": "nothing"}]})


def test_the_go_message_is_made_from_the_cold_childs_results_and_plan():
    """The warm child runs only if the cold child compiled; it is given the planned experiments
    that share its process, in plan order, and the fix budget."""
    planned = ExperimentPlan((ModeSpec("max-autotune"), ConfigFix("x"), AblationSpec("eager")))
    events = [
        Event(event="done", phase="compile", data={"first_call_s": 10.0}),
        Event(event="done", phase="runtime", data={"compiled": {"median_s": 2e-3}}),
        Event(event="done", phase="plan", data=planned.to_data()),
    ]
    go = launcher.warm_go(events, Options())
    assert go == WarmGo(True, 2e-3, (ConfigFix("x"), AblationSpec("eager")), 40.0)
    assert not launcher.warm_go(events[1:], Options()).run  # no compile: the warm child ends
    assert launcher.warm_go(events[1:], Options()).experiments == ()


def test_the_cold_childs_plan_is_typed_and_its_data_unchanged():
    planned = ExperimentPlan(
        (ModeSpec("max-autotune"), ConfigFix("x")),
        ({"remedy": "portable cache", "why": "fast enough"},),
        ({"spec": {"kind": "fix"}, "why": "no patch"},),
    )
    data = planned.to_data()
    assert list(data) == ["strategies", "remedies_not_tried", "patches_not_planned"]
    assert data["strategies"] == [ModeSpec("max-autotune").to_dict(), ConfigFix("x").to_dict()]
    assert ExperimentPlan.from_data(json.loads(json.dumps(data))) == planned
    assert planned.fixes_planned and planned.shared == (ConfigFix("x"),)
    assert ExperimentPlan.from_data(None) == ExperimentPlan() and not ExperimentPlan().fixes_planned


def test_the_timing_loop_yields_each_process_and_is_sent_what_it_gave():
    """The plan asks (a TimingStep), the caller starts the process and sends back (started, its
    result); a process that did not start (the deadline) stops the loop as "budget"."""
    first = {"runtime": _proc(1.16, noise=0.01), "runtime_warm": _proc(1.1, noise=0.01)}
    steps = plan.timing_steps(first, Options(processes=6), RULES)
    step = next(steps)
    assert step == plan.TimingStep(0, sequential.SPREAD_WHY, False)
    result = dict(_proc(1.18, noise=0.01), process=sequential.extra_name(0), why=step.why)
    step = steps.send((True, result))  # undecided at the first look (test_decisions.py's figures)
    assert step == plan.TimingStep(1, sequential.UNDECIDED_WHY, False)
    with pytest.raises(StopIteration) as stop:
        steps.send((False, None))  # past the deadline: not started
    record = stop.value.value
    assert record["processes"] == [result] and record["sequence"]["stopped"] == "budget"


def test_the_experiments_loop_keeps_the_fix_budget_across_its_steps():
    """`in_turn` yields each experiment to run; the time until it is resumed is what the step
    spent, and a fix over the budget is left untried with why, the next strategy still run."""
    specs = [ConfigFix("a"), ConfigFix("b"), ModeSpec("max-autotune")]
    steps = plan.in_turn(specs, fix_budget=0.05, fix_spent=0.0, deadline=1e12, timeout_s=60)
    assert next(steps) == (0, specs[0])
    time.sleep(0.06)  # the first fix spends the whole budget
    assert steps.send(None) == (2, specs[2])
    with pytest.raises(StopIteration) as stop:
        steps.send(None)
    not_tried, late = stop.value.value
    assert [d["spec"] for d in not_tried] == [specs[1].to_dict()] and late is None
