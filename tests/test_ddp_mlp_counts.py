"""Issue 34 (c): under torchrun, each rank's graphs and breaks are PyTorch's counters for the user's
own compile, not torch._dynamo.explain's (explain compiles with its own backend, so under DDP it
runs without DDPOptimizer). The by-hand script (tests/targets/ddp_mlp_by_hand.py) compiles the same
training step in the same two ranks, one call, and prints its counters per rank."""

import functools
import json
import os
import subprocess
import sys

import conftest
from conftest import ROOT

TARGETS = os.path.join(ROOT, "tests", "targets")
run_cli = functools.partial(conftest.run_cli, timeout=300)


def _by_hand(cwd) -> dict[int, dict]:
    p = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
        + [os.path.join(TARGETS, "ddp_mlp_by_hand.py"), "aot_eager"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [
        json.loads(ln[len("COUNTED ") :])
        for ln in p.stdout.splitlines()
        if ln.startswith("COUNTED ")
    ]
    return {r["rank"]: r for r in rows}


def test_rank_counts_are_the_user_compiles_counters(tmp_path):
    by_hand = _by_hand(tmp_path)
    assert sorted(by_hand) == [0, 1], by_hand
    for r in by_hand.values():  # bucket_cap_mb=1: one 1 MiB Linear per bucket, no assertion
        assert r["ddp_buckets"] == 6, r
    rc, out, err = run_cli(
        tmp_path,
        "analyze",
        f"{os.path.join(TARGETS, 'ddp_mlp.py')}:build",
        *("--threads", "1", "--nproc", "2", "--backend", "aot_eager", "--budget", "0.2"),
        *("-q", "--html", "", "--no-warm", "--no-torch-trace", "--no-training-ways"),
        *("--no-fixes", "--json", "r.json"),
    )
    assert rc == 0, (out, err)
    rep = json.loads((tmp_path / "r.json").read_text())
    ranks = rep["distributed"]["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1], ranks
    for r in ranks:
        hand = by_hand[r["rank"]]
        assert (r["graphs"], r["graph_breaks"]) == (hand["graphs"], hand["graph_breaks"]), (
            r,
            hand,
        )
        assert r["ddp"]["subgraphs"] == hand["ddp_buckets"], r["ddp"]
        # explain's run is kept beside them, under its own name
        assert r["explain_graphs"] is not None and r["explain_graph_breaks"] is not None, r
    assert "compile you run" in rep["graph_breaks"]["source"], rep["graph_breaks"]
