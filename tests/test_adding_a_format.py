"""Adding an output format is a renderer and one declaration (render/formats.py `register`).

The formats are one declared set, `FORMATS`, and a command's output flags are read back as one
value (`Outputs`) that reaches the one writer (render/write.py). So a format declared here, in
the test alone, is a flag of every command that writes reports once the commands are built, and
`analyze`'s write path, `report`, `diff` and a sweep's overview write it with no other code.
Without the declaration the flag does not exist. No analysis runs: `analyze`'s analysis is
replaced by a saved report (its write path is the subject).
"""

from __future__ import annotations

import importlib
import json

import pytest
from click.testing import CliRunner
from conftest import saved_report

from tcdoctor.render import formats


def _toy(subject, path: str) -> str:
    """The toy format: what it drew and where to."""
    what = type(subject).__name__
    return json.dumps({"toy": what, "target": getattr(subject, "target", None), "to": path})


@pytest.fixture
def toy_cli(monkeypatch):
    """The command line built again after the toy format's declaration; built again without it
    afterwards."""
    import tcdoctor.cli

    saved = list(formats.FORMATS)
    formats.register(formats.Format("toy", "Toy", _toy))
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    try:
        yield importlib.reload(tcdoctor.cli)
    finally:
        formats.FORMATS[:] = saved
        importlib.reload(tcdoctor.cli)


def test_a_declared_format_is_written_by_analyze_report_diff_and_a_sweep(
    toy_cli, tmp_path, monkeypatch
):
    from tcdoctor.commands import analyze
    from tcdoctor.report.model import Report

    saved = str(saved_report("two_breaks"))
    report = Report.load(saved)
    monkeypatch.setattr(analyze, "analysis", lambda *a, **k: (report, 0))
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke

    done = run(toy_cli.main, ["analyze", "m.py:build", "--html", "", "--toy", "a.toy"])
    assert done.exit_code == 0, done.output
    assert "Toy report: a.toy" in done.output and "JSON report: tcdoctor-report.json" in done.output
    assert json.loads((tmp_path / "a.toy").read_text()) == {
        "toy": "Report",
        "target": report.target,
        "to": "a.toy",
    }
    done = run(toy_cli.main, ["report", saved, "--toy", "r.toy"])
    assert done.exit_code == 0 and "Toy report: r.toy" in done.output, done.output
    done = run(toy_cli.main, ["diff", saved, saved, "--toy", "d.toy"])
    assert done.exit_code == 0 and "Toy diff: d.toy" in done.output, done.output
    assert json.loads((tmp_path / "d.toy").read_text())["toy"] == "Diff"
    # check's flags have it too (made from the same declarations)
    check = toy_cli.main.get_command(None, "check")
    assert "--toy" in {o for p in check.params for o in p.opts}

    from tcdoctor.report.sweep import Sweep
    from tcdoctor.sweep import save_overview

    overview = Sweep()
    written = save_overview(overview, str(tmp_path))
    assert ("Toy overview", str(tmp_path / "sweep.toy")) in written
    assert json.loads((tmp_path / "sweep.toy").read_text())["toy"] == "Sweep"


def test_without_the_declaration_there_is_no_such_flag(tmp_path):
    from tcdoctor.cli import main

    done = CliRunner().invoke(main, ["report", str(saved_report("two_breaks")), "--toy", "x"])
    assert done.exit_code == 2 and "No such option '--toy'" in done.output
    assert [f.key for f in formats.FORMATS] == ["json", "html", "md"]
