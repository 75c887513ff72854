"""Experiments compile from the main analysis's Inductor cache (run/launcher.py): those that share a
process run in the warm process after its phases, the others in children that start from a copy of
it; graphs a tried fix leaves unchanged are cache hits, an environment-only fix compiles nothing, and
a spec that measures a cold compile gets an empty folder. Counts are PyTorch's own FX graph cache
counters of each child's first call."""

from __future__ import annotations

import json
import os

import pytest
from conftest import NO_TIMING_PROCESSES, ROOT, run_cli

from tcdoctor import units
from tcdoctor.experiments.specs import ConfigFix, DynamicSpec, ModeSpec, TrainWaySpec
from tcdoctor.report.sections import FixRow
from tcdoctor.run.launcher import _experiment_cache


def test_fix_children_get_a_copy_and_cold_strategies_an_empty_folder(tmp_path):
    main = tmp_path / "inductor-cache"
    (main / "fxgraph").mkdir(parents=True)
    (main / "fxgraph" / "entry").write_text("graph")
    path, start = _experiment_cache(str(main), str(tmp_path), 0, ConfigFix("x"))
    assert (
        start.startswith("copy") and open(os.path.join(path, "fxgraph", "entry")).read() == "graph"
    )
    os.remove(os.path.join(path, "fxgraph", "entry"))  # the copy is the child's own
    assert (main / "fxgraph" / "entry").exists()
    for i, spec in enumerate(
        (ModeSpec("max-autotune"), TrainWaySpec("model"), DynamicSpec("static"))
    ):
        path, start = _experiment_cache(str(main), str(tmp_path), i + 1, spec)
        assert start == "empty" and not os.path.exists(path)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("cache_reuse")
    target = os.path.join(ROOT, "tests", "targets", "cache_reuse.py") + ":build"
    code, out, err = run_cli(
        cwd, "analyze", target, "--threads", "1", "--budget", "0.3",
        "--fix-budget", "300", *NO_TIMING_PROCESSES, "--json", "r.json", "--html", "", "-q",
        # the cold-start remedies (tried when the cold first call exceeds 60 s, as it may on a busy
        # machine) compile from an empty cache: this file's counts are the fixes' children's
        "--no-compile-remedies",
        timeout=600,
    )  # fmt: skip
    assert code == 0, out[-3000:] + err[-3000:]
    return json.loads((cwd / "r.json").read_text())


def _fix(rep: dict, kind: str) -> dict:
    return next(f for f in rep["fixes"] if f["kind"] == kind)


def test_main_analysis_compiled_every_graph_cold(report):
    cache = report["compile"]["cache"]
    assert cache["fxgraph_cache_hit"] == 0 and cache["fxgraph_cache_miss"] == 3


def test_environment_only_fix_compiles_nothing(report):
    row = _fix(report, "env")
    cache = row["after"]["cache"]
    assert row["cache_start"].startswith("copy")
    assert cache["fxgraph_cache_miss"] == 0
    assert cache["fxgraph_cache_hit"] >= report["compile"]["cache"]["fxgraph_cache_miss"]


def test_config_fix_recompiles_only_the_graph_it_changes(report):
    row = _fix(report, "config")
    assert row["name"] == "capture_scalar_outputs" and row["after"]["graph_breaks"] == 1
    # run in the warm process once its own phases were done: no process of its own
    assert row["cache_start"] == units.WARM_PROCESS_CACHE
    assert "in the warm process" in FixRow.from_dict(row).summary
    assert report["compile"]["warm_s"] is not None
    cache = row["after"]["cache"]
    # graphs 2 and 3 become one new graph (the only miss); graph 1 is unchanged (a hit)
    assert cache["fxgraph_cache_miss"] == 1 and cache["fxgraph_cache_hit"] == 1
