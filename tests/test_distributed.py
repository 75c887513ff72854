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
FAST = [
    "--threads",
    "1",
    "--nproc",
    "2",
    "--backend",
    "aot_eager",
    "--budget",
    "0.2",
    "-q",
    "--html",
    "",
]


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
# Dynamo's own counts for the same call: graphs it compiled (DDPOptimizer's buckets are not graphs)
from torch._dynamo.utils import counters
graphs, breaks = counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())
sys.stdout.write(f"COUNTED {{dist.get_rank()}} {{graphs}} {{breaks}}\\n")
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
    counted = {
        int(line.split()[1]): (int(line.split()[2]), int(line.split()[3]))
        for line in p.stdout.splitlines()
        if line.startswith("COUNTED")
    }
    assert counted == {0: (1, 3), 1: (1, 3)}, p.stdout  # one graph; DDP's forward breaks 3 times
    # per rank, graphs and breaks as Dynamo counts them, not DDPOptimizer's buckets; the one graph
    # is the whole forward (4 Linear + 4 relu), not a bucket's piece
    for r in d["ranks"]:
        assert (r["graphs"], r["graph_breaks"]) == counted[r["rank"]], (r, counted)
        assert r["graph_ops"] == [8], r
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


TRAIN_TARGET = """
import sys
import torch
sys.path.insert(0, {folder!r})
import dist
import tcdoctor


def build():
    model = dist.ddp_model()
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
    x, y = torch.randn(8, dist.WIDTH), torch.randn(8, dist.WIDTH)
    return tcdoctor.TrainStep(model, (x,), targets=y, loss_fn=torch.nn.functional.mse_loss, optimizer=opt)
"""

TRAIN_BY_HAND = """
import logging, sys, torch, torch.distributed as dist
sys.path.insert(0, {folder!r})
dist.init_process_group("gloo")
import train_target
from torch._dynamo.utils import counters
created = []
class Grab(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if "created" in msg and "buckets" in msg:
            created.append(int(msg.split("created")[1].split()[0]))
torch._logging.set_logs(ddp=logging.INFO)
logging.getLogger("torch._dynamo.backends.distributed").addHandler(Grab())
spec = train_target.build()
model, opt, (x,), y = spec.model, spec.optimizer, spec.inputs, spec.targets
def step(x):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()
torch.compile(step, backend="aot_eager")(x)
graphs, breaks = counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())
sys.stdout.write(f"COUNTED {{dist.get_rank()}} {{graphs}} {{breaks}} {{sum(created)}}\\n")
sys.stdout.flush()
dist.destroy_process_group()
"""


def test_ddp_train_step_counts_equal_dynamo_counters(tmp_path):
    """A DDP training step compiled whole: per rank, tcdoctor's graphs and breaks are what Dynamo
    counts for the same step written by hand, DDPOptimizer on, one call (they are read from the
    compile phase's first call, the user's own compile, not from explain's run) (before: DDPOptimizer's 4 bucket subgraphs counted as
    graphs, and the standard step's extra frame logging zero_grad's break twice: 7 / 8 for 4 / 7)."""
    folder = os.path.dirname(TARGETS)
    (tmp_path / "train_target.py").write_text(TRAIN_TARGET.format(folder=folder))
    (tmp_path / "by_hand.py").write_text(TRAIN_BY_HAND.format(folder=str(tmp_path)))
    p = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
        + [str(tmp_path / "by_hand.py")],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    counted = {
        int(ln.split()[1]): tuple(int(v) for v in ln.split()[2:])
        for ln in p.stdout.splitlines()
        if ln.startswith("COUNTED")
    }
    assert counted == {0: (4, 7, 4), 1: (4, 7, 4)}, p.stdout  # graphs, breaks, DDP buckets
    rc, out, err = run_cli(
        tmp_path,
        "analyze",
        f"{tmp_path / 'train_target.py'}:build",
        *FAST,
        "--no-warm",
        "--no-torch-trace",
        "--no-training-ways",
        "--no-fixes",
        "--json",
        "r.json",
    )
    assert rc == 0, (out, err)
    rep = json.loads((tmp_path / "r.json").read_text())
    d = rep["distributed"]
    for r in d["ranks"]:
        graphs, breaks, buckets = counted[r["rank"]]
        assert (r["graphs"], r["graph_breaks"]) == (graphs, breaks), (r, counted)
        assert r["ddp"]["subgraphs"] == buckets, r["ddp"]
        # explain's own run (DDPOptimizer off) is kept beside, labelled, never in place of them
        assert r["explain_graphs"] is not None and r["explain_graph_breaks"] is not None, r
    # the counts are the user's compile's first call (DDPOptimizer on), not explain's (report/counts.py)
    assert "compile you run" in rep["graphs"]["source"], rep["graphs"]
    assert "compile you run" in rep["graph_breaks"]["source"], rep["graph_breaks"]


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
    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.report.model import Report

    page = HtmlRenderer().render(Report.from_dict(ddp_run[0]))
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
        # the cold process alone: the trace is its own, and timing-only processes (up to 6 while
        # eager and compiled, both eager here, are not told apart) would add nothing read here
        "--processes",
        "1",
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
    assert f"| attach to a PyTorch issue | `{log}` |" in (tmp_path / "r.md").read_text()
    if not tt["tlparse"]:  # tlparse not installed: the one command that would render it
        assert tt["command"] in err
