"""One analysis pipeline (tcdoctor/run/pipeline.py) behind the CLI, `tcdoctor.analyze` and `sweep`,
one mapping from a child's fatal record to an error, and one atomic writer (render/write.py).

Cheap on purpose: the eager or aot_eager backend, one analysis process (`--no-warm --processes 1`),
one thread, no tried fixes. `--expected-calls 1` makes the verdict deterministic (no compile pays back over one
call), so the three ways of asking can be held to the same verdict, not just the same counts."""

import json
import os

import pytest
from conftest import ONE_PROCESS, ROOT, run_cli

import tcdoctor
from tcdoctor.errors import TargetError, TcdoctorError, UserCodeError
from tcdoctor.report.events import Event

BAD = os.path.join(ROOT, "tests", "targets", "bad.py")
BREAKS = os.path.join(ROOT, "tests", "targets", "sweep", "graph_break.py") + ":build"
DIST = os.path.join(ROOT, "tests", "targets", "dist.py")
# no tried fixes: the print() break's source patch would be proved in a child of its own in each of
# the three ways of asking, and no test here reads a fix
CHEAP = {
    "backend": "eager", "threads": 1, "budget_s": 0.1, "warm": False, "processes": 1,
    "fixes": False,
}  # fmt: skip
CHEAP_FLAGS = [
    "--backend", "eager", "--threads", "1", "--budget", "0.1", *ONE_PROCESS, "--no-fixes",
]  # fmt: skip


def _figures(rep: dict) -> dict:
    """What the three ways of asking must agree on: the verdict and the counts."""
    return {
        "verdict": rep["verdict"]["decision"],
        "horizon": rep["verdict"]["break_even"]["expected_calls"],  # --expected-calls reached it
        "graph_breaks": rep["graph_breaks"]["count"],
        "graphs": rep["graphs"]["count"],
        "recompiles": rep["recompiles"]["count"],
    }


def test_cli_api_and_a_sweep_row_agree_on_one_target(tmp_path):
    rc, out, err = run_cli(
        tmp_path, "analyze", BREAKS, *CHEAP_FLAGS, "--expected-calls", "1", "-q",
        "--json", "cli.json", "--html", "",
    )  # fmt: skip
    assert rc == 0, (out, err)
    cli = _figures(json.loads((tmp_path / "cli.json").read_text()))
    api = _figures(tcdoctor.analyze(BREAKS, expected_calls=1, **CHEAP).to_dict())
    rc, out, err = run_cli(
        tmp_path, "sweep", BREAKS, *CHEAP_FLAGS, "--expected-calls", "1", "-q", "--out", "sw"
    )
    assert rc == 0, (out, err)
    (row,) = json.loads((tmp_path / "sw" / "sweep.json").read_text())["rows"]
    swept = _figures(json.loads((tmp_path / "sw" / row["json"]).read_text()))
    assert cli == api == swept, (cli, api, swept)
    assert cli["graph_breaks"] == 1 and cli["graphs"] == 2 and cli["recompiles"] == 0, cli
    assert (cli["verdict"], cli["horizon"]) == ("dont-compile", 1), cli  # one call never pays back
    assert (row["verdict"], row["graph_breaks"], row["recompiles"]) == (
        cli["verdict"],
        cli["graph_breaks"],
        cli["recompiles"],
    )


def _ranks(rep: dict) -> list[tuple]:
    d = rep["distributed"]
    assert d["world_size"] == 2, d
    return [(r["rank"], r["graphs"], r["graph_breaks"], r["recompiles"]) for r in d["ranks"]]


def test_the_api_runs_nproc_2_distributed_as_the_cli_does(tmp_path):
    target = f"{DIST}:build_uneven"  # rank 1 recompiles, rank 0 does not: per-rank, not one row
    rc, out, err = run_cli(
        tmp_path, "analyze", target, "--nproc", "2", "--backend", "aot_eager", "--threads", "1",
        "--budget", "0.2", "--no-warm", "--no-torch-trace", "--expected-calls", "1", "-q",
        "--json", "cli.json", "--html", "",
        timeout=240,
    )  # fmt: skip
    assert rc == 0, (out, err)
    cli = json.loads((tmp_path / "cli.json").read_text())
    api = tcdoctor.analyze(
        target,
        nproc=2,
        backend="aot_eager",
        threads=1,
        budget_s=0.2,
        warm=False,
        expected_calls=1,
    ).to_dict()
    assert _ranks(api) == _ranks(cli), (_ranks(api), _ranks(cli))
    assert [r[0] for r in _ranks(api)] == [0, 1]
    assert _ranks(api)[0][3] == 0 and _ranks(api)[1][3] >= 1  # measured per rank
    assert api["verdict"]["decision"] == cli["verdict"]["decision"]
    assert api["verdict"]["break_even"]["expected_calls"] == 1
    kinds = lambda rep: sorted(x["kind"] for x in rep["distributed"]["divergences"])  # noqa: E731
    assert kinds(api) == kinds(cli) and "recompiles" in kinds(api)


@pytest.mark.parametrize(
    "target,error,code,text",
    [
        (f"{BAD}:build_raises", UserCodeError, 3, "build_raises() raised ValueError: no weights here (at"),
        ("nope/missing.py:build", TargetError, 2, "file not found: nope/missing.py"),
    ],
)  # fmt: skip
def test_a_fatal_record_is_one_error_through_cli_and_api(tmp_path, target, error, code, text):
    rc, out, err = run_cli(tmp_path, "analyze", target, *CHEAP_FLAGS, "-q", "--html", "")
    (line,) = [ln for ln in err.splitlines() if ln.startswith("tcdoctor: error:")]
    assert rc == code and text in line and "Traceback" not in err, (rc, err)
    cwd = os.getcwd()
    os.chdir(tmp_path)  # the relative target resolves where the CLI ran
    try:
        with pytest.raises(error) as raised:
            tcdoctor.analyze(target, **CHEAP)
    finally:
        os.chdir(cwd)
    assert raised.value.exit_code == code
    assert line == f"tcdoctor: error: {raised.value.message}"


def test_an_in_process_model_that_raises_is_the_same_user_code_error():
    import torch

    class Raises(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("forward is broken")

    with pytest.raises(UserCodeError) as raised:
        tcdoctor.analyze(Raises(), (torch.randn(2),), backend="eager", threads=1, budget_s=0.1)
    assert raised.value.exit_code == 3 and "RuntimeError: forward is broken" in raised.value.message


def test_every_fatal_record_maps_to_its_error_in_one_place():
    from tcdoctor.errors import ChildFailed
    from tcdoctor.run.process import fatal_event_error

    where = {"file": "m.py", "line": 7, "func": "build"}

    def fatal(phase, code, message="boom", where=None):
        return [Event(event="start", phase=phase),
                Event(event="failed", phase=phase, fatal=True, exit_code=code, error={"message": message, "where": where})]  # fmt: skip

    assert fatal_event_error([Event(event="end")]) is None
    err = fatal_event_error(fatal("load", 2, "file not found: m.py"))
    assert type(err) is TargetError and (err.exit_code, err.message) == (2, "file not found: m.py")
    err = fatal_event_error(fatal("eager", 3, "ValueError: x", where), rank=1)
    assert type(err) is UserCodeError and err.exit_code == 3
    assert err.message.startswith("rank 1: ValueError: x (at ") and "m.py:7" in err.message
    err = fatal_event_error(fatal("rank", 70, "gloo down"), rank=0)
    assert type(err) is ChildFailed and err.exit_code == 70  # not the user's code (exit 3)
    assert err.message == "rank 0: could not join the process group: gloo down"


# ---------------------------------------------------------------------------- the writer


def _report():
    from tcdoctor.report.model import Report

    rep = Report()
    rep.target = "m.py:build"
    return rep


def test_a_renderer_that_raises_leaves_the_previous_files_and_no_temporary_file(
    tmp_path, monkeypatch
):
    from tcdoctor.render import html
    from tcdoctor.render.formats import Outputs
    from tcdoctor.render.write import write_report

    json_path, html_path = str(tmp_path / "r.json"), str(tmp_path / "r.html")
    outputs = Outputs.of(json=json_path, html=html_path)
    assert write_report(_report(), outputs) == [
        ("JSON report", json_path),
        ("HTML report", html_path),
    ]
    before = {p: open(p, encoding="utf-8").read() for p in (json_path, html_path)}
    assert "m.py:build" in before[json_path] and "<html" in before[html_path].lower()

    def broken(self, report):
        raise RuntimeError("renderer bug")

    monkeypatch.setattr(html.HtmlRenderer, "render", broken)
    changed = _report()
    changed.target = "other.py:build"
    with pytest.raises(RuntimeError, match="renderer bug"):
        write_report(changed, outputs)
    assert {p: open(p, encoding="utf-8").read() for p in before} == before  # JSON too: not written
    assert sorted(os.listdir(tmp_path)) == ["r.html", "r.json"]


def test_a_write_that_fails_midway_is_one_line_and_leaves_the_old_file(tmp_path, monkeypatch):
    from tcdoctor.render.write import write_text
    from tcdoctor.report import files

    path = tmp_path / "j.xml"
    write_text(str(path), "old")

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full_disk)
    with pytest.raises(TcdoctorError) as raised:
        write_text(str(path), "new")
    assert raised.value.exit_code == 2 and "No space left on device" in raised.value.message
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["j.xml"]
    monkeypatch.undo()
    write_text(str(path), "new")
    mask = os.umask(0)
    os.umask(mask)
    assert path.read_text() == "new" and path.stat().st_mode & 0o777 == 0o666 & ~mask


def test_a_symlink_keeps_its_link_and_a_device_is_written_in_place(tmp_path):
    from tcdoctor.report.files import write_atomic

    (tmp_path / "real.json").write_text("old")
    os.symlink("real.json", tmp_path / "link.json")
    write_atomic(str(tmp_path / "link.json"), "new")
    assert os.path.islink(tmp_path / "link.json") and (tmp_path / "real.json").read_text() == "new"
    write_atomic(os.devnull, "discarded")  # a character device: never renamed over
    assert not os.path.isfile(os.devnull)
    assert sorted(os.listdir(tmp_path)) == ["link.json", "real.json"]


# ---------------------------------------------------------------------------- docs/api.md


def test_every_name_docs_api_md_gives_exists():
    """Each dotted `tcdoctor.…` name in docs/api.md's code resolves, and each keyword argument its
    signature line gives `tcdoctor.analyze` is one of its parameters."""
    import importlib
    import inspect
    import re

    text = open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8").read()
    names = set(re.findall(r"\btcdoctor(?:\.[A-Za-z_]\w*)+", text))
    assert {"tcdoctor.analyze", "tcdoctor.run.pipeline.analyze", "tcdoctor.Report.load"} <= names
    for name in sorted(names):
        parts, obj = name.split("."), None
        for i in range(len(parts), 0, -1):  # the longest importable module, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for attr in parts[i:]:
                assert hasattr(obj, attr), name
                obj = getattr(obj, attr)
            break
        assert obj is not None, name
    (sig,) = re.findall(r"`tcdoctor\.analyze\((model.*?)\)`", text, re.S)
    given = {p.split("=")[0].strip(" *\n") for p in sig.split(",")} - {""}
    params = set(inspect.signature(tcdoctor.analyze).parameters)
    assert given <= params and "expected_calls" in given, (given, params)
