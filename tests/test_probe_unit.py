"""A probe is one unit: its measure, its declaration with its record, one renderer line.

A toy probe, declared here as a new probe's module would declare it (a `Phase` with its record,
its fill and its terminal row; its measure named by "module:function", this file's), counts the
parameters of the model in the child process's way (`ctx.fresh()`, the runner's context). Its
figure must arrive in the JSON report and in the terminal's key-figure table through the
registry alone: nothing in run/, report/model.py or the renderers names it. The in-process API
runs it (eager backend); the control runs the same analysis without it registered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
import torch

import tcdoctor
from tcdoctor import units
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report import phases
from tcdoctor.report.model import Report
from tcdoctor.report.phases import IN_PROCESS, Phase
from tcdoctor.report.record import Record


@dataclass
class ToyCount(Record):
    """The toy probe's section: the parameters of a fresh copy of the model."""

    parameters: int | None = None
    method: str | None = None


def phase_toy(ctx) -> dict:
    """The toy's measure, run by the driver with the runner as its context."""
    model = ctx.fresh().workload.model
    return {"parameters": sum(p.numel() for p in model.parameters()), "method": "numel summed"}


TOY = Phase(
    "toy_count",
    frozenset({IN_PROCESS}),
    ("toy_count",),
    measure=f"{__name__}:phase_toy",
    order=125,  # after numerics (120), before recompiles (130)
    record=ToyCount,
    row=lambda rec: ("toy parameters", units.count(rec.parameters)),
)


@pytest.fixture
def toy_registered(monkeypatch):
    for name in ("PHASES", "BY_NAME", "SECTIONS"):
        monkeypatch.setattr(phases, name, getattr(phases, name))  # restored after the test
    phases.register(TOY)
    yield TOY


def _analyze():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    return tcdoctor.analyze(
        model, (torch.ones(2, 6),), backend="eager", budget_s=0.1, profile_budget_s=0.1
    )


def test_a_toy_probe_reaches_the_json_and_the_terminal_through_the_registry(
    toy_registered, tmp_path
):
    assert phases.order(IN_PROCESS)[-4:] == ("toy_count", "recompiles", "drift", "miscompile")
    report = _analyze()
    saved = json.loads(report.to_json())
    assert saved["phases"]["toy_count"]["status"] == "ok"
    assert saved["toy_count"]["parameters"] == 6 * 5 + 5 + 5 * 3 + 3  # 53
    typed = phases.section(report, "toy_count")
    assert isinstance(typed, ToyCount) and typed.parameters == 53
    lines = [ln for ln in TerminalRenderer().render(report).splitlines() if "toy parameters" in ln]
    assert len(lines) == 1 and "53" in lines[0], lines
    report.save(str(tmp_path / "r.json"))  # a saved report keeps it, and reads it typed again
    loaded = Report.load(str(tmp_path / "r.json"))
    assert phases.section(loaded, "toy_count") == ToyCount(parameters=53, method="numel summed")


def test_control_without_the_declaration_nothing_of_it_appears():
    report = _analyze()
    saved = json.loads(report.to_json())
    assert "toy_count" not in saved and "toy_count" not in saved["phases"]
    assert "toy parameters" not in TerminalRenderer().render(report)


def test_a_taken_order_or_name_is_refused(monkeypatch):
    for name in ("PHASES", "BY_NAME", "SECTIONS"):
        monkeypatch.setattr(phases, name, getattr(phases, name))
    with pytest.raises(ValueError, match="same order"):
        phases.register(Phase("toy2", frozenset({IN_PROCESS}), (), measure="m:f", order=120))
    with pytest.raises(ValueError, match="same name"):
        phases.register(Phase("numerics", frozenset({IN_PROCESS}), (), measure="m:f", order=121))


def test_the_registry_is_found_from_the_package_and_loads_no_torch():
    """Every builtin phase comes from a module of report/phases/ (no list to edit), in the order
    and processes the analysis has always had, and reading the table imports no torch."""
    import subprocess
    import sys

    code = (
        "import sys; from tcdoctor.report import phases; "
        "print([p.name for p in phases.PHASES]); "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names, torch_mods = out.stdout.splitlines()
    assert eval(names) == [  # noqa: S307 - our own printed list
        "environment",
        "eager",
        "graph_breaks",
        "compile",
        "cache_artifacts",
        "compile_warm",
        "runtime",
        "runtime_warm",
        "runtime_extra",
        "memory",
        "memory_graphs",  # issue 36: declared in its own module, found without a list
        "profile",
        "numerics",
        "recompiles",
        "drift",  # issue 36: compiles parts of the model, after the variants
        "miscompile",  # issue 64: only when numerics failed, in a process of its own, last
    ]
    assert torch_mods == "[]"
    warm = ("compile_warm", "runtime_warm", "memory", "memory_graphs", "profile")
    assert phases.order("warm") == warm
    assert phases.order("timing") == ("runtime_extra",)
