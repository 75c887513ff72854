"""Every bad input: one line on stderr, a documented exit code, never a tcdoctor traceback."""

import json

import pytest
from conftest import ONE_PROCESS, ROOT  # noqa: F401

BAD = "{root}/tests/targets/bad.py"
FAST = [
    "--threads",
    "1",
    "--backend",
    "eager",
    "--budget",
    "0.1",
    *ONE_PROCESS,
    "--html",
    "",
]


def one_line(err):
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("tcdoctor: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    "target,code,text",
    [
        ("nope/missing.py:build", 2, "file not found: nope/missing.py"),
        ("{root}/tests/targets/bad.py", 2, "target must look like path.py:function"),
        ("{root}/tests/targets/syntax_error.py:build", 2, "syntax error in"),
        (BAD + ":no_such_function", 2, "has no function 'no_such_function'"),
        (BAD + ":NOT_CALLABLE", 2, "is a int, not a function"),
        (
            BAD + ":wrong_type",
            2,
            "must return (model, example_inputs), (model, args, kwargs), tcdoctor.Workload or tcdoctor.TrainStep, got int",
        ),
        (BAD + ":wrong_tuple", 2, "the third item must be a dict of keyword arguments, got str"),
        (BAD + ":four_items", 2, "got a tuple of 4 items"),
        (BAD + ":needs_args", 2, "must take no arguments"),
        (BAD + ":build_raises", 3, "build_raises() raised ValueError: no weights here (at"),
        (BAD + ":forward_raises", 3, "RuntimeError: forward is broken (at"),
    ],
)
def test_bad_target_one_line(cli, target, code, text):
    rc, out, err = cli("analyze", target.format(root=ROOT), *FAST)
    assert rc == code, (out, err)
    assert text in one_line(err)


def test_raising_only_under_compile_keeps_earlier_phases(cli, tmp_path):
    with_warm = [a for a in FAST if a != "--no-warm"]  # the warm child must stand down, not fail
    rc, out, err = cli(
        "analyze", f"{ROOT}/tests/targets/bad.py:compile_raises", *with_warm, "--json", "r.json"
    )
    assert rc == 4, err
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["phases"]["graph_breaks"]["status"] == "ok" and rep["graphs"]["count"] is not None
    (e,) = [e for e in rep["errors"] if e["phase"] == "compile"]
    assert e["message"].startswith("Unsupported: Failed to trace builtin operator"), e
    assert rep["runtime"]["not_measured"].startswith("the compiled model is not available")
    assert rep["verdict"]["decision"] == "dont-compile"
    assert [e["phase"] for e in rep["errors"]] == ["compile"] and rep["compile"]["warm_s"] is None
    assert "Traceback" not in err


def test_hang_is_cut_by_timeout_with_location_and_finished_phases(cli, tmp_path):
    rc, out, err = cli(
        "analyze",
        f"{ROOT}/tests/targets/bad.py:hangs_in_variant",
        *FAST,
        "--timeout",
        "25",
        "--json",
        "r.json",
    )
    assert rc == 4, err
    rep = json.loads((tmp_path / "r.json").read_text())
    (e,) = rep["errors"]
    assert e["phase"] == "recompiles" and "timed out" in e["message"]
    assert (
        e["where"] and e["where"]["function"] == "_hang" and e["where"]["file"].endswith("bad.py")
    )
    assert rep["runtime"]["speedup"] is not None and rep["phases"]["numerics"]["status"] == "ok"


def test_hard_crash_of_child_keeps_report(cli, tmp_path):
    rc, out, err = cli(
        "analyze", f"{ROOT}/tests/targets/bad.py:crashes_in_variant", *FAST, "--json", "r.json"
    )
    assert rc == 4, err
    rep = json.loads((tmp_path / "r.json").read_text())
    (e,) = rep["errors"]
    assert e["phase"] == "recompiles" and "SIGSEGV" in e["message"]
    assert e["where"]["function"] == "_segfault"
    assert rep["runtime"]["speedup"] is not None


def test_bad_saved_report(cli, tmp_path):
    (tmp_path / "x.json").write_text("{}")
    rc, _, err = cli("report", "x.json")
    assert rc == 2 and "not a tcdoctor report" in one_line(err)
    rc, _, err = cli("report", "missing.json")
    assert rc == 2 and "file not found" in one_line(err)


def test_a_closed_stdout_still_writes_the_report_and_never_passes(tmp_path):
    """`tcdoctor report saved.json --html out.html | head`: the files come first; exit 141, no traceback."""
    import os
    import subprocess
    import sys

    saved = os.path.join(ROOT, "tests", "data", "schema1_two_breaks.json")
    p = subprocess.Popen(
        [sys.executable, "-m", "tcdoctor", "report", saved, "--html", "out.html", "--md", "out.md"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    p.stdout.close()  # the reader is gone before tcdoctor prints anything
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141, err
    assert "internal error" not in err and "Traceback" not in err, err
    assert (tmp_path / "out.html").stat().st_size > 1000 and (tmp_path / "out.md").exists()
