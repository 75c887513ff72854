"""The serving section's ahead-of-time part (probes/aot.py, probes/export_findings.py).

Cheap: the shape plan from a traffic (no export); a data-dependent branch and a guard on the
batch size (torch.export + draft_export alone, no C++ build); a build with no C++ compiler (export
and Inductor's lowering, then the build refused). One real build (`inductor`): a small MLP
exported with a dynamic batch, its package loaded and served in a fresh process, numerics against
eager.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import torch

from tcdoctor.probes import aot, aot_reference, export_findings
from tcdoctor.probes.traffic_replay import replay
from tcdoctor.target.traffic import Request, describe
from tcdoctor.target.workload import CallArgs, Workload

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets", "aot")
sys.path.insert(0, HERE)

import aot_branch as branch  # noqa: E402
import aot_dim_guard as dim_guard  # noqa: E402
import aot_mlp as mlp  # noqa: E402
import aot_raises as raises  # noqa: E402


def _run(mod, reqs, tmp_path, budget_s):
    """aot.run on a target's model and requests; the labels of the steps it announced (each a
    start and a done event, in order)."""
    model, inputs = mod.build()
    calls = [CallArgs(r) for r in reqs]
    events: list[dict] = []
    deadline = time.monotonic() + budget_s
    out = aot.run(
        Workload(model, inputs), calls, out_dir=str(tmp_path), deadline=deadline, sink=events.append
    )
    starts = [e["phase"] for e in events if e["event"] == "start"]
    assert starts == [e["phase"] for e in events if e["event"] == "done"]
    return out, starts


def test_shape_plan_groups_dims_that_vary_together_and_skips_a_batch_of_one():
    calls = [
        CallArgs((torch.zeros(b, s, dtype=torch.long),), {"mask": torch.ones(b, s), "k": 3})
        for b, s in ((1, 16), (4, 16), (2, 64), (8, 32))
    ]
    bad = CallArgs((torch.zeros(2, 3, 5),), {"mask": torch.ones(2, 3), "k": 3})  # rank 3
    calls.insert(0, bad)  # first in the traffic: the others still make the plan
    plan = export_findings.shape_plan(calls)
    dims = {d.name: d for d in plan.dims}
    assert set(dims) == {"args_0_dim0", "args_0_dim1"}
    assert dims["args_0_dim0"].where == [("args[0]", 0), ("kwargs['mask']", 0)]
    assert (dims["args_0_dim0"].min, dims["args_0_dim0"].max) == (1, 8)
    assert (dims["args_0_dim1"].min, dims["args_0_dim1"].max) == (16, 64)
    assert plan.example_index == 2  # request 1 has batch 1: export would specialise it
    assert plan.odd_requests == [0] and plan.varying_values == []
    spec = export_findings.dynamic_shapes(lambda x, mask, k: None, calls[2], plan)
    assert set(spec) == {"x", "mask", "k"} and spec["k"] is None
    assert spec["x"][0] is spec["mask"][0]  # one Dim: export refuses two it finds equal

    varying = [CallArgs((torch.zeros(2, 4), n)) for n in (1, 2)]
    assert export_findings.shape_plan(varying).varying_values == ["args[1]"]


def test_data_dependent_branch_is_a_finding_with_its_line(tmp_path):
    out, labels = _run(branch, branch.requests(), tmp_path, budget_s=120)
    assert out["exported"] is False
    assert out["export_s"] > 0 and out["draft_export_s"] > 0
    (finding,) = out["findings"]
    assert os.path.realpath(finding["file"]) == os.path.realpath(branch.__file__)
    assert finding["line"] == branch.BRANCH_LINE
    assert finding["code"] == "if y.sum() > 0:"
    assert finding["why"].startswith("Data dependent error.")
    assert "torch.cond" in finding["fix"]
    assert out["not_measured"]["export"].startswith("torch.export failed:")
    assert list(out["not_measured"]) == ["export"] and out["package_path"] is None
    assert labels == [aot.LABELS["export"], aot.LABELS["draft"]]
    assert os.path.isdir(tmp_path / "draft-export-log")  # its log kept out of the system's tmp
    final = aot.finish(out, None)
    assert "package_path" not in final and "serve" not in final["not_measured"]


def test_guard_on_the_batch_names_the_dim_range_and_pytorchs_fix(tmp_path):
    out, _ = _run(dim_guard, dim_guard.requests(), tmp_path, budget_s=120)
    assert out["exported"] is False
    assert out["dynamic_shapes"] == [
        {"name": "args_0_dim0", "min": 1, "max": 16, "dims": ["args[0].shape[0]"]}
    ]
    (finding,) = out["findings"]
    assert finding["kind"] == "GUARD_ADDED"
    assert (finding["file"], finding["line"]) == (dim_guard.__file__, dim_guard.GUARD_LINE)
    assert "satisfy the generated guard" in finding["why"]
    assert "in 1..16" in finding["fix"]
    assert "PyTorch suggests: args_0_dim0 = Dim('args_0_dim0', max=4)" in finding["fix"]


def test_a_model_that_raises_is_a_finding_from_its_traceback(tmp_path):
    out, _ = _run(raises, raises.requests(), tmp_path, budget_s=60)
    assert out["exported"] is False
    (finding,) = out["findings"]
    assert (finding["file"], finding["line"]) == (raises.__file__, raises.RAISE_LINE)
    assert finding["why"] == "ValueError: this model refuses every request"


def test_no_compiler_is_not_measured_with_why(tmp_path):
    with torch._inductor.config.patch({"cpp.cxx": ("/nonexistent",)}):
        out, labels = _run(mlp, mlp.requests(6), tmp_path, budget_s=120)
    assert out["exported"] is True and out["export_s"] > 0
    assert out["compile_s"] is None and out["package_path"] is None
    why = out["not_measured"]["package"]
    assert why.startswith("the AOTInductor build failed") and "C++ compiler" in why
    assert labels == [aot.LABELS["export"], aot.LABELS["build"]]
    assert not os.path.exists(tmp_path / aot.PACKAGE)


def test_no_build_is_started_without_the_time_for_one(tmp_path):
    out, labels = _run(mlp, mlp.requests(6), tmp_path, budget_s=aot.MIN_BUILD_S - 1)
    assert out["exported"] is True
    assert out["not_measured"]["package"].startswith("deadline:")
    assert aot.LABELS["build"] not in labels


def test_a_varying_non_tensor_argument_is_refused_before_export(tmp_path):
    model, inputs = mlp.build()
    calls = [CallArgs((torch.randn(b, 32),), {}) for b in (2, 3)]
    calls = [CallArgs(c.args + (n,)) for c, n in zip(calls, (1, 2))]
    deadline = time.monotonic() + 60
    out = aot.run(Workload(model, inputs), calls, out_dir=str(tmp_path), deadline=deadline)
    assert out["export_s"] is None
    assert "args[1]" in out["not_measured"]["export"]


def _reference(model, calls, tmp_path):
    plan = export_findings.shape_plan(calls)
    path = str(tmp_path / aot.REFERENCE)
    return aot_reference.save_reference(Workload(model, calls[0].args), calls, plan, path), path


def test_reference_roundtrip_passes_the_same_model_and_fails_a_changed_one(tmp_path):
    model, _ = mlp.build()
    calls = [CallArgs(r) for r in mlp.requests(12)]
    why, path = _reference(model, calls, tmp_path)
    assert why is None
    saved = aot_reference.read_saved(path)
    assert saved["accepts"]["leaves"]["args[0]"] == {"dtype": "float32", "dims": [[1, 16], 32]}
    same = aot_reference.compare_with_eager(model, saved)
    assert same["status"] == "pass" and same["max_abs_err"] == 0.0
    assert same["requests"][0] == 0 and len(same["requests"]) <= aot_reference.COMPARED
    assert same["tensors_compared"] == len(same["requests"])

    def changed(x):
        return model(x) * (1 + 1e-3)

    other = aot_reference.compare_with_eager(changed, saved)
    assert other["status"] == "fail" and other["failed_outputs"]


def test_a_random_model_is_not_compared(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(32, 8), torch.nn.Dropout(0.5)).train()
    why, path = _reference(model, [CallArgs(r) for r in mlp.requests(4)], tmp_path)
    assert why.startswith("the model draws random numbers")
    saved = aot_reference.read_saved(path)  # what the package accepts is saved all the same
    assert (
        saved["accepts"] and aot_reference.compare_with_eager(model, saved)["not_measured"] == why
    )


def test_a_request_that_does_not_fit_the_program_is_kept_from_the_package():
    """A planted bad request (wrong rank) mid-traffic, and one past the traffic's range: one error
    each, naming the request, in its place among the per-request latencies; the rest served."""
    calls = [CallArgs(r) for r in mlp.requests(8)]
    plan = export_findings.shape_plan(calls)
    traffic = [*calls[:3], CallArgs((torch.randn(2, 3, 32),)), *calls[3:]]
    traffic.append(CallArgs((torch.randn(plan.dims[0].max + 1, 32),)))
    requests = [Request(i, ca, describe(ca)) for i, ca in enumerate(traffic)]
    model, _ = mlp.build()
    sent: list[int] = []

    def call(fn, args):
        sent.append(args.args[0].shape[0] if args.args[0].dim() == 2 else -1)
        return fn(*args.args)

    gate = aot_reference.Gate(plan.accepts)
    result = replay(model, gate.stream(requests), call, lambda: None, deadline=1e18)
    merged = gate.merge(result)
    assert -1 not in sent and len(sent) == len(traffic) - 2
    lat = merged["latencies_s"]
    assert len(lat) == len(traffic) and lat[3] is None and lat[-1] is None
    assert all(x is not None for i, x in enumerate(lat) if i not in (3, len(traffic) - 1))
    bad, past = merged["errors"]
    assert bad["request"] == 3 and "args[0] has rank 3, the program takes rank 2" in bad["message"]
    assert past["request"] == len(traffic) - 1
    top = plan.dims[0].max
    assert f"args[0].shape[0] is {top + 1}, the program takes 1..{top}" in past["message"]


def _run_fresh(n: int, seed: int, tmp_path, budget_s: float) -> tuple[dict, list]:
    """`_run` of the MLP in a fresh process, as the serving part's own child builds: its first C++
    build probes the CPU's ISA in its inductor cache folder. In this test process torch caches the
    ISA per process, so a test run before it on the same worker that compiled with Inductor in
    another folder (tests/test_miscompile_inductor.py sets its own) left this folder unprobed, and
    the load's fresh process then built the probe's 6 libraries itself (failed so in a whole run)."""
    code = (
        "import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
        "import test_aot as t; "
        "out, labels = t._run(t.mlp, t.mlp.requests(int(sys.argv[2]), int(sys.argv[3])), "
        "Path(sys.argv[4]), float(sys.argv[5])); print(json.dumps([out, labels]))"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    args = [sys.executable, "-c", code, here, str(n), str(seed), str(tmp_path), str(budget_s)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=budget_s + 60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out, labels = json.loads(proc.stdout.strip().splitlines()[-1])
    return out, labels


@pytest.mark.inductor
def test_mlp_package_built_loaded_in_a_fresh_process_and_matches_eager(tmp_path):
    n, seed = 24, 0
    out, labels = _run_fresh(n, seed, tmp_path, budget_s=300)
    assert out["exported"] and out["findings"] == []
    assert out["dynamic_shapes"][0]["min"] == 1  # batch 1 is in the traffic, and served
    assert out["compile_s"] > 0 and out["package_bytes"] > 0, out["not_measured"]
    assert out["package_path"] and out["reference_path"]
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(HERE, "serve_package.py"),
            out["package_path"],
            out["reference_path"],
            str(n),
            str(seed),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    served = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [e for e, _ in served["events"]] == ["start", "done", "start", "done"]
    assert served["events"][2][1] == aot.LABELS["serve"].format(n=n)
    final = aot.finish(out, served)
    assert final["not_measured"] == {}, final["not_measured"]
    assert final["load_s"] > 0 and final["isa_probe_s"] > 0
    assert final["isa_probe_builds"] == 0  # the build probed the same cache folder first
    assert out["build_isa_probe_s"] > 0 and out["build_isa_probe_builds"] is not None
    assert len(final["latencies_s"]) == n and all(x > 0 for x in final["latencies_s"])
    assert final["p50_s"] <= final["p99_s"] <= max(final["latencies_s"])
    assert final["first_request_s"] > final["load_s"] + final["isa_probe_s"]
    num = final["numerics"]
    assert num["status"] == "pass" and num["failed_outputs"] == []
    assert 0 in num["requests"]  # the batch-1 request is among those compared
    assert num["tensors_compared"] == len(num["requests"]) >= 3
    assert num["max_abs_err"] < 1e-4
