"""Issue 34: the evidence the verdict decides from is complete.

A hand-written NMS loop (tests/targets/real/nms_loop.py): the `.item()` inside its `while` loop is a
graph break in a loop (GB7000), so Dynamo skips the whole `Detector.forward` and compiles the
`iou` helper it calls as a frame of its own, which recompiles inside the first call as the
candidates shrink (63 rows, then any n >= 2 once dynamic, then 1 row: 0/1 specialisation).
"""

import dataclasses
import inspect
import json
import os
import subprocess
import sys

import pytest
from conftest import ONE_PROCESS, ROOT

from tcdoctor.probes.graph_breaks import _is_entry, function_at
from tcdoctor.report.model import Report
from tcdoctor.thresholds import RULES
from tcdoctor.verdict.decision import decision
from tcdoctor.verdict.figures import Figures

TARGET = os.path.join(ROOT, "tests", "targets", "real", "nms_loop.py")
FAST = ("--backend", "eager", "--budget", "0.2", "--threads", "1", *ONE_PROCESS)
FAST += ("--no-fixes", "--html", "", "--quiet", "--json", "r.json")

# The same call compiled by hand in a fresh process: PyTorch's own record of its recompiles.
BY_HAND = """
import importlib.util, json, sys, torch
from torch._dynamo import utils as du
spec = importlib.util.spec_from_file_location("nms_loop", {target!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
du.set_compilation_metrics_limit(10000)
w = getattr(mod, sys.argv[1])()
model, calls = (w[0], [w[1]]) if isinstance(w, tuple) else (w.model, [w.inputs, *w.variants])
compiled = torch.compile(model, backend="eager")
per_call = []
with torch.no_grad():
    for inputs in calls:
        n = len(du.get_compilation_metrics())
        compiled(*inputs)
        per_call.append([
            [m.co_name, m.recompile_reason] for m in du.get_compilation_metrics()[n:] if m.recompile_reason
        ])
print("BY_HAND " + json.dumps(per_call))
"""


def _by_hand(tmp_path, build: str) -> list[list]:
    script = tmp_path / "by_hand.py"
    script.write_text(BY_HAND.format(target=TARGET))
    p = subprocess.run(
        [sys.executable, str(script), build], capture_output=True, text=True, timeout=180
    )
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("BY_HAND "))
    return json.loads(line[len("BY_HAND ") :])


@pytest.fixture(scope="module")
def nms(tmp_path_factory):
    """tcdoctor's report of the NMS detector and PyTorch's count for the same call by hand."""
    import conftest

    tmp = tmp_path_factory.mktemp("nms")
    rc, out, err = conftest.run_cli(tmp, "analyze", f"{TARGET}:build", *FAST)
    assert rc == 0, (out, err)
    path = str(tmp / "r.json")
    with open(path) as fh:
        data = json.load(fh)
    return data, Report.load(path), _by_hand(tmp, "build")


@pytest.mark.timing
def test_recompiles_inside_the_first_call_are_counted(nms):
    data, report, by_hand = nms
    (first,) = by_hand  # one call
    # PyTorch records 2 recompiles of iou within the first call (backend eager): 63 -> 46 rows, then 1
    assert [name for name, _ in first] == ["iou", "iou"], first
    rc = data["recompiles"]
    assert rc["count"] == len(first) == 2 and rc["first_call_count"] == 2, rc
    assert [e["phase"] for e in rc["events"]] == ["first call", "first call"]
    assert [e["raw_reason"] for e in rc["events"]] == [reason for _, reason in first]
    assert "size mismatch at index 0: expected 63, actual 46" in rc["events"][0]["reason"]
    assert all(e["function"].startswith("iou (nms_loop.py:") for e in rc["events"])
    # the report's own compile table lists iou once per compile: the first, then each recompile
    rows = [r for r in data["compile"]["graphs"]["rows"] if r["function"] == "iou"]
    assert len(rows) - 1 == rc["count"], rows
    # and the verdict's figures carry the same count
    assert Figures.from_report(report).recompiles == 2


@pytest.mark.timing
def test_the_skipped_entry_frame_is_named(nms):
    data, report, _ = nms
    (skip,) = [f for f in data["graph_breaks"]["unique"] if f["frame_skipped"]]
    import importlib.util

    spec = importlib.util.spec_from_file_location("nms_loop_src", TARGET)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    def_line = inspect.getsourcelines(mod.Detector.forward)[1]
    assert skip["skipped_frame"] == {
        "function": "Detector.forward",
        "file": TARGET,
        "line": def_line,
        "entry": True,
    }, skip
    assert skip["in_loop"] is True
    # when compiled is decidedly faster (a quiet run: the processes' own load, which decides
    # nothing here, is left out), the verdict says which frame runs eagerly and why
    faster = dataclasses.replace(
        Figures.from_report(report),
        undecided_why=None,
        regimes=(),
        others_cores=None,
        speedup=1.5,
        ci_low=1.4,
        ci_high=1.6,
        eager_s=1e-3,
        compiled_s=1e-3 / 1.5,
        cold_s=0.5,
        numerics_passed=True,
    )
    verdict, reasons = decision(faster, RULES)
    assert verdict == "compile-after-fixes", reasons
    named = (
        f"the model's entry `Detector.forward` at nms_loop.py:{def_line} runs eagerly: a graph "
        f"break inside a loop (nms_loop.py:{skip['line']}) skips the whole frame"
    )
    assert named in reasons[0], reasons
    # and the report's own verdict (compiled not faster here) names it too
    assert any(named in r for r in report.verdict.reasons), report.verdict.reasons


def test_first_call_and_variant_recompiles_are_counted_once(tmp_path):
    """The variants continue from the first call: each recompile is in one phase only."""
    import conftest

    rc, out, err = conftest.run_cli(
        tmp_path, "analyze", f"{TARGET}:build_with_variant", *FAST, "--no-dynamic"
    )
    assert rc == 0, (out, err)
    data = json.loads((tmp_path / "r.json").read_text())
    first, variant = _by_hand(tmp_path, "build_with_variant")
    r = data["recompiles"]
    assert r["count"] == len(first) + len(variant), (r, first, variant)
    assert r["first_call_count"] == len(first) == 2, r
    phases = [e["phase"] for e in r["events"]]
    assert phases == ["first call"] * len(first) + ["variants"] * len(variant), phases


def test_function_at_names_methods_and_decorated_functions(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "import functools\n"
        "class A:\n"
        "    @functools.lru_cache\n"
        "    def f(self):\n"
        "        def g():\n"
        "            return 1\n"
        "        return g()\n"
    )
    # a code object's first line is its first decorator's; a line inside names the innermost function
    assert function_at(str(src), 3, "f", True) == {"function": "A.f", "line": 4}
    assert function_at(str(src), 4, "f", True) == {"function": "A.f", "line": 4}
    assert function_at(str(src), 6, "g", False) == {"function": "A.f.<locals>.g", "line": 5}
    assert function_at(str(src), 6, "g", True) is None
    assert [_is_entry(c) for c in ("0/0", "0/3", "1/0", "10/0", None)] == [
        True,
        True,
        False,
        False,
        None,
    ]


def test_a_region_without_a_graph_leaves_the_call_marked():
    """Issue 34 (d): an Inductor training step has regions that trace no op (the step's frame up
    to `zero_grad`'s break, the optimizer's wrappers): their self time is all outside a graph, and
    the call's graph calls are still marked (before: 'this backend does not mark its graph calls'
    under Inductor). With no graph call at all (eager, aot_eager) the call stays unmarked."""
    from tcdoctor.probes import break_cost

    us = 1000
    ev = [
        ("tcdoctor.call", 0, 1000 * us),
        ("Torch-Compiled Region: 0/0", 10 * us, 900 * us),  # zero_grad's frame: no graph
        ("aten::zero_", 20 * us, 30 * us),
        ("Torch-Compiled Region: 1/0", 100 * us, 700 * us),  # forward, loss, backward
        ("## Call CompiledFxGraph a ##", 120 * us, 300 * us),
    ]
    (call,) = break_cost.per_call(ev)
    assert call["marked"] is True
    assert call["regions"] == {"0/0": 200 * us, "1/0": 400 * us}
    assert call["region_eager"]["0/0"] == 30 * us
    (unmarked,) = break_cost.per_call([e for e in ev if not e[0].startswith("## Call")])
    assert unmarked["marked"] is False


def test_a_recompile_limit_hit_inside_the_first_call_is_flagged():
    """PyTorch 2.13: the entry that hits the limit has a recompile_reason and a fail_reason saying so
    (a helper fed 11 dtypes from a loop: 1/1..1/7 recompile, 1/8 gives up)."""
    from types import SimpleNamespace as M

    from tcdoctor.probes import recompiles

    ms = [
        M(compile_id="1/0", co_name="helper", co_filename="m.py", recompile_reason=None),
        M(compile_id="1/1", co_name="helper", co_filename="m.py", recompile_reason="1/0: dtype"),
        M(
            compile_id="1/8",
            co_name=None,
            co_filename=None,
            recompile_reason="1/7: tensor 'x' dtype mismatch. expected Long, actual Byte",
            fail_type="Unsupported",
            fail_reason="Dynamo recompile limit exceeded\n  Explanation: ...",
        ),
    ]
    events = recompiles.first_call_events(ms, "M.forward", "(Tensor[4] float32)")
    assert [e.phase for e in events] == ["first call", "first call"]
    assert events[1].variant == "the first call (Tensor[4] float32)"
    assert len(recompiles._limit_failures(ms)) == 1
