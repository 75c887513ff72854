"""Distributed analyses: two ranks on CPU with gloo under torch.distributed.run, cheap backends."""

import functools
import json
import os
import subprocess
import sys

import conftest
import pytest
from conftest import ROOT

TARGETS = os.path.join(ROOT, "tests", "targets", "dist.py")
FAST = ["--nproc", "2", "--backend", "aot_eager", "--budget", "0.2", "-q", "--html", ""]


run_cli = functools.partial(conftest.run_cli, timeout=240)


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    """One DDP analysis (cold and warm launches) shared by the tests that read it."""
    tmp = tmp_path_factory.mktemp("ddp")
    rc, out, err = run_cli(
        tmp,
        "analyze",
        f"{TARGETS}:build_ddp",
        *FAST,
        "--no-torch-trace",
        "--json",
        "r.json",
        "--md",
        "r.md",
    )
    assert rc == 0, (out, err)
    return json.loads((tmp / "r.json").read_text()), out, (tmp / "r.md").read_text(), tmp


INDEPENDENT = """
import logging, os, sys, torch, torch.distributed as dist
sys.path.insert(0, os.path.dirname({targets!r}))
dist.init_process_group("gloo")
import importlib.util
spec = importlib.util.spec_from_file_location("dist_target", {targets!r}); mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
torch.manual_seed(0)
created = []
class Grab(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if "created" in msg and "buckets" in msg:
            created.append(int(msg.split("created")[1].split()[0]))
torch._logging.set_logs(ddp=logging.INFO)
logging.getLogger("torch._dynamo.backends.distributed").addHandler(Grab())
model = torch.compile(mod.ddp_model(), backend="aot_eager")
with torch.no_grad():
    model(torch.randn(8, mod.WIDTH))
# one write per line: both ranks share the pipe, and print() writes its parts separately
sys.stdout.write(f"CREATED {{dist.get_rank()}} {{sum(created)}}\\n")
sys.stdout.flush()
dist.destroy_process_group()
"""


def test_ddp_subgraphs_equal_what_dynamo_logs(ddp_run, tmp_path):
    rep, out, md, _ = ddp_run
    d = rep["distributed"]
    assert d["world_size"] == 2 and d["backend"] == "gloo" and d["timeout_s"] == 1800.0
    assert [r["rank"] for r in d["ranks"]] == [0, 1]
    for r in d["ranks"]:
        for key in (
            "graphs",
            "graph_breaks",
            "recompiles",
            "guards",
            "first_call_s",
            "warm_first_call_s",
            "step_median_s",
            "peak_bytes",
        ):
            assert r[key] is not None, (key, r)
    assert (
        d["compile_skew_s"] >= 0 and d["mixed_cache_skew_s"] is not None and d["divergences"] == []
    )
    # An independent run under torch.distributed.run, with Dynamo's own log and no tcdoctor probe.
    script = tmp_path / "independent.py"
    script.write_text(INDEPENDENT.format(targets=TARGETS))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    created = {
        int(line.split()[1]): int(line.split()[2])
        for line in p.stdout.splitlines()
        if line.startswith("CREATED")
    }
    assert created == {0: 4, 1: 4}, (
        p.stdout
    )  # 4 Linear(512, 512) layers of 1 MiB each, bucket_cap_mb=1
    ddp = d["ddp"]
    assert ddp["subgraphs"] == created[0] and ddp["subgraphs_per_rank"] == {
        "0": created[0],
        "1": created[1],
    }
    assert (
        ddp["optimize_ddp"] == "True"
        and ddp["mode"] == "ddp_optimizer"
        and ddp["bucket_cap_mb"] == 1.0
    )
    # the rank table is in every output
    assert "Ranks:" in out and "DDPOptimizer subgraphs at the first call: 4" in out
    assert "### Ranks (2 of 2)" in md


def test_merge_joins_nodes_and_recomputes(ddp_run):
    rep, _, _, tmp = ddp_run
    nodes = []
    for rank in (0, 1):  # as if each rank had run on a node of its own
        part = json.loads(json.dumps(rep))
        part["distributed"]["ranks"] = [r for r in rep["distributed"]["ranks"] if r["rank"] == rank]
        part["distributed"]["compile_skew_s"] = None
        (tmp / f"node{rank}.json").write_text(json.dumps(part))
        nodes.append(f"node{rank}.json")
    rc, out, err = run_cli(tmp, "merge", nodes[1], nodes[0], "-o", "merged.json")
    assert rc == 0, err
    merged = json.loads((tmp / "merged.json").read_text())["distributed"]
    assert [r["rank"] for r in merged["ranks"]] == [0, 1] and merged["missing_ranks"] == []
    assert merged["compile_skew_s"] == pytest.approx(rep["distributed"]["compile_skew_s"])
    rc, out, err = run_cli(tmp, "merge", nodes[0], nodes[0], "-o", "bad.json")
    assert rc == 2 and "rank 0 appears in more than one report" in err


def test_rank_with_another_shape_is_flagged_divergent(tmp_path):
    rc, out, err = run_cli(
        tmp_path,
        "analyze",
        f"{TARGETS}:build_uneven",
        *FAST,
        "--no-warm",
        "--no-torch-trace",
        "--json",
        "r.json",
    )
    assert rc == 0, (out, err)
    rep = json.loads((tmp_path / "r.json").read_text())
    d = rep["distributed"]
    r0, r1 = d["ranks"]
    assert (
        r0["recompiles"] == 0 and r1["recompiles"] >= 1
    )  # only the rank whose batch changed recompiles
    kinds = {x["kind"] for x in d["divergences"]}
    assert {"recompiles", "inputs"} <= kinds, d["divergences"]
    assert any("hang" in x["risk"] or "wait" in x["risk"] for x in d["divergences"])
    assert any(
        r.startswith("Distributed: ranks compile differently") for r in rep["verdict"]["reasons"]
    )
    assert any(a["topic"] == "distributed" for a in rep["verdict"]["advice"])
    assert "DIVERGENCE: recompile reasons differ between ranks (rank 0: none, rank 1: tensor" in out
    assert "size mismatch at index 0: expected 8, actual 5" in out


def test_crash_on_one_rank_keeps_the_other_ranks_phases(tmp_path):
    rc, out, err = run_cli(
        tmp_path,
        "analyze",
        f"{TARGETS}:build_crash",
        *FAST,
        "--no-warm",
        "--no-torch-trace",
        "--json",
        "r.json",
    )
    assert rc == 4, (out, err)
    rep = json.loads((tmp_path / "r.json").read_text())
    assert (
        rep["phases"]["environment"]["status"] == "ok" and rep["phases"]["eager"]["status"] == "ok"
    )  # rank 0's
    (crash,) = [e for e in rep["errors"] if e.get("rank") == 1]
    assert crash["message"].startswith(
        "rank 1: the analysis process exited with code 17 during phase 'graph_breaks'"
    ), crash
    rows = {r["rank"]: r for r in rep["distributed"]["ranks"]}
    assert rows[1]["finished"] is False and "eager" in rows[0]["phases"]
    assert "Traceback" not in err


def test_html_has_the_rank_table(ddp_run):
    from tcdoctor.render.html import render
    from tcdoctor.report import Report

    page = render(Report.from_dict(ddp_run[0]))
    assert "Ranks (2 of 2)" in page and "DDPOptimizer subgraphs at the first call: 4" in page


def test_torch_trace_single_process(tmp_path):
    rc, out, err = run_cli(
        tmp_path,
        "analyze",
        os.path.join(ROOT, "samples", "mlp.py:build"),
        "--backend",
        "eager",
        "--budget",
        "0.1",
        "--no-warm",
        "-q",
        "--html",
        "",
        "--md",
        "r.md",
        "--json",
        "r.json",
        "--torch-trace",
        "trace",
    )
    assert rc == 0, err
    tt = json.loads((tmp_path / "r.json").read_text())["torch_trace"]
    (log,) = tt["logs"]
    assert log.startswith(str(tmp_path / "trace" / "cold")) and os.path.getsize(log) > 0
    assert tt["command"].startswith("tlparse ") and "--all-ranks-html" not in tt["command"]
    assert f"to attach to a PyTorch issue: `{log}`" in (tmp_path / "r.md").read_text()
    if not tt["tlparse"]:  # tlparse not installed: the one command that would render it
        assert tt["command"] in err
