"""Compile strategies: the recommendation pinned on each sample, the figures behind it consistent."""

import copy
import json
import subprocess
import sys

import pytest
import torch
from conftest import CHEAP, ONE_PROCESS, ROOT, sample

import tcdoctor
from tcdoctor.report.sections import StrategyRow
from tcdoctor.thresholds import RULES
from tcdoctor.verdict.recommend import trade


def analyze(tmp_path, target, *args, timeout=600):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "tcdoctor",
            "analyze",
            f"{ROOT}/samples/{target}",
            "--threads",
            "1",
            *args,
            "--json",
            "r.json",
            "--html",
            "",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads((tmp_path / "r.json").read_text()), p.stdout


# the same analysis as test_tried.py's shape fixes read (conftest.shared_analysis: run once)
SEQ_LEN = (sample("seq_len.py") + ":build", *CHEAP, "--budget", "0.5")


def test_dynamic_shapes_recommend_dynamic_over_static_naming_the_dimension(shared_analysis):
    rep, out = shared_analysis(*SEQ_LEN)
    rows = {r["name"]: r for r in rep["strategies"]["dynamic"]}
    assert set(rows) == {"static", "automatic", "dynamic", "marked"}
    limit = rep["recompiles"]["limit"]
    assert rows["static"]["limit_hit"] is True and rows["static"]["compiles"] == limit + 1
    assert rows["automatic"]["compiles"] == 2 and rows["dynamic"]["compiles"] == 1
    # 'automatic' is the main analysis's own setting: its row is the recompile sequence, no child
    assert rows["automatic"]["source"] == "main analysis"
    assert "strategy:dynamic:automatic" not in rep["phases"]
    assert rows["automatic"]["recompiles"] == rep["recompiles"]["count"] == 1
    assert [r["name"] for r in rep["strategies"]["dynamic"]] == [
        "static",
        "automatic",
        "dynamic",
        "marked",
    ]
    assert rows["marked"]["compiles"] == 1 and rows["marked"]["changing_dims"] == ["args[0] dim 1"]
    assert all(len(r["shapes"]) == 11 for r in rows.values())
    rec = rep["verdict"]["recommendations"]["dynamic"]
    assert rec["choice"] in ("automatic", "dynamic", "marked") and rec["dims"] == ["x dim 1"]
    # the lowest compile + calls over the horizon, unless it beats the main analysis's setting
    # ('automatic') by no more than the spread of compile seconds between processes
    costs, best = rec["costs_s"], min(rec["costs_s"], key=rec["costs_s"].get)
    main_row = StrategyRow.from_dict(rows["automatic"])
    wins = trade(StrategyRow.from_dict(rows[best]), main_row, RULES)[0]
    assert rec["choice"] == (best if best == "automatic" or wins else "automatic"), costs
    assert "x dim 1" in out


def test_no_training_ways_runs_no_way_child_and_says_so(tmp_path):
    rep, out = analyze(
        tmp_path,
        "train_adam.py:build",
        *("--backend", "aot_eager", "--budget", "0.3", "--no-fixes", "--no-training-ways"),
        *ONE_PROCESS,
    )
    assert not [p for p in rep["strategies"]["planned"] if p["kind"] == "train"]
    assert not [k for k in rep["phases"] if k.startswith("strategy:train:")]
    assert [r["name"] for r in rep["strategies"]["training"]] == ["eager", "step"]
    step = rep["strategies"]["training"][1]  # the main analysis as a row: its figures, not None
    assert step["first_call_s"] == rep["compile"]["cold_s"] > 0
    assert step["median_s"] == rep["runtime"]["compiled"]["median_s"]
    (note,) = rep["strategies"]["not_run"]
    assert "--no-training-ways" in note["why"] and "not measured (--no-training-ways" in out


@pytest.mark.timing
def test_training_ways_compared_on_fresh_copies(tmp_path):
    rep, _ = analyze(
        tmp_path,
        "train_adam.py:build",
        # no tried fixes: the training ways are under test. One analysis process: each way runs in
        # a child of its own, and nothing read here comes from the warm process (with --no-fixes
        # it runs no shared experiment; the step row is the cold process's)
        *("--backend", "aot_eager", "--budget", "1", "--no-fixes", *ONE_PROCESS),
    )
    rows = {r["name"]: r for r in rep["strategies"]["training"]}
    assert list(rows) == ["eager", "step", "model", "optimizer"]
    assert all(r["median_s"] and r["median_s"] > 0 for r in rows.values())
    assert any(
        f["reason"] == "Unsupported Tensor.backward() call" for f in rep["graph_breaks"]["unique"]
    )
    for way in (
        "model",
        "optimizer",
    ):  # same initial weights and data: the first step's loss matches eager
        assert rows[way]["numerics_passed"] is True
    rec = rep["verdict"]["recommendations"]["training"]
    faster = [
        r
        for r in rows.values()
        if r["name"] != "eager" and r["speedup_ci"] and r["speedup_ci"][0] > RULES.min_speedup
    ]
    if rec["choice"] == "eager":
        assert not faster
    else:
        assert rows[rec["choice"]]["speedup"] == max(r["speedup"] for r in faster)
        assert rec["break_even_steps"][rec["choice"]] >= 1


def test_training_analysis_leaves_the_users_model_and_optimizer_untouched():
    import importlib

    spec = importlib.import_module("train_adam").build()
    before = copy.deepcopy(spec.model.state_dict())
    opt_before = copy.deepcopy(spec.optimizer.state_dict())
    # one thread: beside the other test worker, two threads on two shared cores stall at each
    # parallel region (the timing phase took 23-47 s of a 0.2 s budget at load 5); this test reads
    # no timing, and the analysis restores the thread count after (run/pipeline.py)
    rep = tcdoctor.analyze(spec, backend="aot_eager", budget_s=0.2, profile_budget_s=0.2, threads=1)
    assert rep.runtime.samples >= 10
    for k, v in spec.model.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert spec.optimizer.state_dict()["state"] == opt_before["state"] == {}


@pytest.mark.timing
@pytest.mark.inductor
def test_regions_recommend_the_clean_child_only(tmp_path):
    # no tried fixes (nor the backend ablation, which they include): the regions are under test.
    # One analysis process: each region is timed in a child of its own against eager, and the
    # recommendation reads those rows and the cold process's eager forward, nothing of the warm one
    rep, _ = analyze(tmp_path, "regions.py:build", "--budget", "1.5", "--no-fixes", *ONE_PROCESS)
    reg = rep["strategies"]["regions"]
    assert reg["automatic"] is True and rep["graph_breaks"]["count"] >= RULES.regional_auto_breaks
    rows = {r["name"]: r for r in reg["regions"]}
    assert rows["body"]["fullgraph"] is True and rows["head"]["fullgraph"] is False
    assert "Unsupported" in rows["head"]["why"]
    assert rows["body"]["speedup_ci"][0] > 1.0
    rec = rep["verdict"]["recommendations"]["regions"]
    assert rec["choice"] == ["body"] and rec["expected_gain_s_per_forward"] > 0
    assert "leave head eager" in rec["text"]


def test_modes_side_by_side_reuse_the_main_analysis(tmp_path):
    rep, _ = analyze(
        tmp_path,
        "mlp.py:build",
        "--backend",
        "aot_eager",
        "--budget",
        "0.5",
        "--modes",
        "default,reduce-overhead",
        *ONE_PROCESS,
    )
    modes = rep["strategies"]["modes"]
    # eager first (the baseline every row is timed against: the benchmark article's table)
    assert [m["name"] for m in modes] == ["eager", "default", "reduce-overhead"]
    eager, main, other = modes
    assert eager["baseline"] and eager["median_s"] == rep["runtime"]["eager"]["median_s"]
    assert eager["first_call_s"] == rep["compile"]["eager_first_call_s"] > 0
    assert (
        main["source"] == "main analysis"
        and main["median_s"] == rep["runtime"]["compiled"]["median_s"]
        and main["first_call_s"] == rep["compile"]["cold_s"] > 0
    )
    assert other["median_s"] > 0 and other["first_call_s"] > 0
    assert other["first_call_peak_bytes"] is not None  # its first call's memory, in its child
    assert [p["kind"] for p in rep["strategies"]["planned"]] == ["mode"]
