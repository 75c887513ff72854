"""A gate check added by one entry of the gate's table (checks/table.py `CHECKS`) reaches every
place the gate is made from: `tcdoctor check --help`, the Python API (`tcdoctor.checks.check`,
`run_checks`), `check --sweep`'s refusal, the terminal lines, the JUnit file and the GitHub step
summary; and what a check asks of the timing loop reaches it. On a saved report
(tests/data/schema1_two_breaks.json, 99 guards): no analysis runs."""

import json
import pathlib

import pytest
from click.testing import CliRunner
from conftest import ROOT
from junitparser import JUnitXml

from tcdoctor import api, checks, cli
from tcdoctor.checks import table
from tcdoctor.errors import TcdoctorError
from tcdoctor.report.model import Report

SAVED = pathlib.Path(ROOT) / "tests" / "data" / "schema1_two_breaks.json"

# the one entry a new check is: its flag, what it reads, how it judges (at most the limit)
PLANTED = table.Check(
    "max_planted_guards",
    "count",
    help="Planted by tests/test_gate_table.py: guards of the first call at most this many.",
    name="planted guards",
    reads=lambda r: r.guards.count,
)


@pytest.fixture
def planted(monkeypatch):
    monkeypatch.setattr(table, "CHECKS", (*table.CHECKS, PLANTED))
    return cli.check_command()  # `check` built again from the table, as at import


def test_the_table_is_where_check_and_its_api_come_from():
    """Without the entry the flag and keyword exist nowhere (the planted tests below could fail)."""
    assert "--max-planted-guards" not in CliRunner().invoke(cli.main, ["check", "--help"]).output
    assert "max_planted_guards" not in checks.limits()
    with pytest.raises(ValueError, match="max_planted_guards"):
        checks.check(Report.load(str(SAVED)), max_planted_guards=1)
    # every check of the table is a flag of the real `check`, with its help
    out = CliRunner().invoke(cli.main, ["check", "--help"], terminal_width=200).output
    for c in table.checks():
        assert c.spelling in out, c.key


def test_a_planted_check_is_a_flag_of_check(planted):
    out = CliRunner().invoke(planted, ["--help"], terminal_width=200).output
    assert "--max-planted-guards INTEGER RANGE" in out
    assert "Planted by tests/test_gate_table.py" in out


def test_a_planted_check_is_in_the_python_api(planted):
    rep = Report.load(str(SAVED))
    assert "max_planted_guards" in checks.limits("report")
    (failed,) = api.check(rep, max_planted_guards=50)
    assert (failed.name, failed.figure, failed.status) == ("planted guards", "99", "FAIL")
    assert failed.reason == "99 (≤ 50 required)"
    (passed,) = table.run_checks(rep, max_planted_guards=99)
    assert passed.status == "PASS"
    assert checks.exit_code([failed]) == 1 and checks.exit_code([passed]) == 0


def test_a_planted_check_is_refused_by_check_sweep(planted, tmp_path):
    r = CliRunner().invoke(planted, ["--sweep", str(tmp_path), "--max-planted-guards", "1"])
    assert r.exit_code == 2
    assert "--sweep DIR takes the sweep's thresholds" in r.stderr


def test_a_planted_check_reaches_the_terminal_junit_and_step_summary(planted, tmp_path):
    junit, summary = tmp_path / "checks.xml", tmp_path / "summary.md"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(tmp_path),
    }
    args = ["--report", str(SAVED), "--max-planted-guards", "50", "--max-graph-breaks", "2"]
    r = CliRunner().invoke(planted, [*args, "--junit", str(junit)], env=env)
    assert r.exit_code == 1, r.output
    assert "FAIL  planted guards: 99 (≤ 50 required)" in r.stdout
    assert "PASS  graph breaks: 2 (≤ 2 required)" in r.stdout
    assert "::error title=tcdoctor check failed%3A planted guards::99 (≤ 50 required)" in r.stdout
    (suite,) = list(JUnitXml.fromfile(str(junit)))
    cases = {c.name: c for c in suite}
    assert set(cases) == {"planted guards", "graph breaks"}
    (failure,) = cases["planted guards"].result
    assert failure.message == "99 (≤ 50 required)"
    assert cases["graph breaks"].is_passed
    text = summary.read_text()
    assert "| ❌ | planted guards | 99 | ≤ 50 | 99 (≤ 50 required) |" in text


def test_what_a_check_asks_reaches_the_timing_loop(monkeypatch, tmp_path):
    """`check TARGET`: the checks' questions (`Check.asks`: --min-speedup's threshold,
    --max-slowdown's comparison with the baseline's processes) reach the launcher, which is
    replaced here by one that records them and stops the command (no analysis runs)."""
    asked = []

    def record(target, opts, progress, questions):
        asked.append(questions)
        raise TcdoctorError("stopped by the test", 2)

    monkeypatch.setattr("tcdoctor.run.launcher.analyze_target", record)
    baseline = json.loads(SAVED.read_text())
    baseline["runtime"]["processes"] = [{"speedup": 1.5}, {"speedup": 1.6}]
    (tmp_path / "base.json").write_text(json.dumps(baseline))
    args = ["samples/two_breaks.py:build", "--backend", "aot_eager", "--min-speedup", "1.3"]
    args += ["--baseline", str(tmp_path / "base.json"), "--max-slowdown", "10", "-q"]
    r = CliRunner().invoke(cli.check_command(), args)
    assert r.exit_code == 2 and "stopped by the test" in r.stderr, r.output
    (questions,) = asked
    assert questions.speedups == (1.3,)
    question = questions.slowdown
    assert question.pct == 10 and [p.speedup for p in question.baseline] == [1.5, 1.6]
