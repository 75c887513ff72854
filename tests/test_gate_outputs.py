"""The gate complete where CI reads it (issue 35), on saved reports and literal sweeps: baselines of
another measurement refused, an incomplete baseline an error (not a failed check), JUnit on every
exit path with per-target testcase ids, the annotations cap, flags a saved report cannot honour,
`diff`'s regressions and exit code. One real analysis only: `build()` raising (exit 3)."""

import json
import os
import pathlib
import re

import pytest
from conftest import ROOT, github_env, plain_env, run_cli
from junitparser import JUnitXml

from tcdoctor.checks.table import baseline_checks, regressions
from tcdoctor.render.github import GitHubAnnotations
from tcdoctor.report.model import Report
from tcdoctor.report.sections import GraphBreak

SAVED = pathlib.Path(ROOT) / "tests" / "data" / "schema1_two_breaks.json"
BAD = pathlib.Path(ROOT) / "tests" / "targets" / "bad.py"


def run(cwd, *args, env=None):
    return run_cli(cwd, *args, timeout=300, env=plain_env() if env is None else env)


def saved_with(tmp_path, name: str, change) -> str:
    """SAVED, changed by `change(data)` (its JSON dict), written as tmp_path/name."""
    data = json.loads(SAVED.read_text())
    change(data)
    (tmp_path / name).write_text(json.dumps(data))
    return str(tmp_path / name)


def one_error_line(err: str) -> str:
    lines = [s for s in err.strip().splitlines() if s]
    assert len(lines) == 1 and lines[0].startswith("tcdoctor: error: "), err
    assert "Traceback" not in err
    return lines[0]


def suite_of(path):
    (suite,) = list(JUnitXml.fromfile(str(path)))
    return suite


# 1. Safe baselines


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda d: d.update(target="samples/other.py:build"), "target"),
        (lambda d: d["options"].update(backend="inductor"), "backend inductor → aot_eager"),
        (lambda d: d["options"].update(mode="max-autotune"), "mode"),
        (lambda d: d["environment"].update(device="cuda"), "device cuda → cpu"),
    ],
)
def test_a_baseline_of_another_measurement_is_refused_unless_allowed(tmp_path, change, named):
    old = saved_with(tmp_path, "old.json", change)
    args = ["check", "--report", str(SAVED), "--baseline", old, "--max-new-graph-breaks", "0"]
    code, out, err = run(tmp_path, *args, "--junit", "j.xml")
    assert code == 2 and named in one_error_line(err) and "--allow-mismatch" in err
    assert suite_of(tmp_path / "j.xml").errors == 1  # JUnit on the exit-2 path too
    code, out, err = run(tmp_path, *args, "--allow-mismatch")
    assert code == 0, out + err
    assert "note: judged against a baseline of another measurement" in out and named in out
    # the control: the same measurement on another checkout path is no mismatch
    moved = saved_with(
        tmp_path, "moved.json", lambda d: d.update(target="/ci/x/samples/two_breaks.py:build")
    )
    code, out, err = run(
        tmp_path,
        "check",
        "--report",
        str(SAVED),
        "--baseline",
        moved,
        "--max-new-graph-breaks",
        "0",
    )
    assert code == 0 and "another measurement" not in out, err


def test_an_incomplete_baseline_is_one_error_naming_it_never_a_failed_check(tmp_path):
    def broken(d):
        d["errors"] = [{"phase": "runtime", "message": "timed out after 600 s"}]

    old = saved_with(tmp_path, "old.json", broken)
    args = ["check", "--report", str(SAVED), "--max-graph-breaks", "2", "--baseline", old]
    code, out, err = run(
        tmp_path, *args, "--max-slowdown", "5", "--max-new-graph-breaks", "0", "--junit", "j.xml"
    )
    assert code == 2, out + err
    (line,) = [s for s in out.splitlines() if s.startswith("ERROR ")]
    assert "the baseline is incomplete" in line and "runtime: timed out after 600 s" in line
    assert not [s for s in out.splitlines() if s.startswith("FAIL ")]
    suite = suite_of(tmp_path / "j.xml")
    assert (suite.tests, suite.failures, suite.errors) == (2, 0, 1)
    (bad,) = [c for c in suite if not c.is_passed]
    assert bad.result[0]._tag == "error" and "incomplete" in bad.result[0].message


def test_a_baseline_lacking_a_figure_is_one_error_and_the_other_limits_judged():
    old = Report.load(str(SAVED))
    lacking = Report.from_dict(json.loads(old.to_json()))
    lacking.runtime.speedup_ci = None
    lacking.runtime.speedup = None
    lacking.compile.first_call_s = None
    results = baseline_checks(
        old, lacking, max_new_graph_breaks=0, max_slowdown=5, max_compile_growth=50
    )
    assert [r.status for r in results] == ["PASS", "ERROR"]
    err = results[1].reason
    assert "speedup (--max-slowdown)" in err and "cold compile time (--max-compile-growth)" in err
    # the new report lacking a figure still fails its check: a gate never passes on no evidence
    (r,) = baseline_checks(lacking, old, max_slowdown=5)
    assert r.status == "FAIL" and "in the new report" in r.reason


# 2. JUnit on every path


@pytest.mark.parametrize(
    "args, code, text",
    [
        (["--report", "nope.json", "--max-graph-breaks", "0"], 2, "file not found: nope.json"),
        (["nope/missing.py:build", "--max-graph-breaks", "0"], 2, "file not found"),
        ([f"{BAD}:build_raises", "--max-graph-breaks", "0", "--backend", "eager"], 3, "raised"),
    ],
)
def test_junit_and_the_summary_are_written_on_exit_2_and_3(tmp_path, args, code, text):
    rc, out, err = run(tmp_path, "check", *args, "--junit", "j.xml", env=github_env(tmp_path))
    assert rc == code and text in one_error_line(err)
    suite = suite_of(tmp_path / "j.xml")
    (case,) = list(suite)
    assert (suite.tests, suite.failures, suite.errors) == (1, 0, 1)
    assert case.result[0]._tag == "error" and text in case.result[0].message
    assert text in err.split("tcdoctor: error: ")[1] and case.result[0].message in err
    summary = (tmp_path / "summary.md").read_text()
    assert (
        summary.startswith("## tcdoctor check: 0 passed, 0 failed, 1 error(s)") and text in summary
    )
    assert "::error title=tcdoctor check error%3A tcdoctor check::" in out


def test_a_rank_that_could_not_join_still_gets_its_junit_error_as_the_docs_say(
    tmp_path, monkeypatch
):
    """Exit 70 has two causes: a rank that could not join the process group is a ChildFailed
    (tcdoctor's setup or the environment), judged nothing and written as one JUnit error like exit
    2 and 3; only an internal error (an exception of tcdoctor's own) writes no JUnit file."""
    from tcdoctor.commands.outputs import Gate
    from tcdoctor.errors import EXIT_INTERNAL, ChildFailed

    for name in [k for k in os.environ if k.startswith("GITHUB_")]:  # no step summary here
        monkeypatch.delenv(name)
    msg = "rank 1: could not join the process group: connection refused"
    Gate(str(tmp_path / "j.xml"), {}, False).not_judged(
        ChildFailed(msg, EXIT_INTERNAL), "dist.py:build"
    )
    suite = suite_of(tmp_path / "j.xml")
    (case,) = list(suite)
    assert (suite.tests, suite.errors) == (1, 1) and msg in case.result[0].message
    readme = (pathlib.Path(ROOT) / "README.md").read_text()
    assert "`--junit` is written on every exit but an internal error's 70 and 141" in readme
    ci = (pathlib.Path(ROOT) / "docs" / "ci.md").read_text()
    row = next(line for line in ci.splitlines() if line.startswith("| 70 |"))
    assert "could not join the process group" in row and "one JUnit error" in row


def test_an_incomplete_report_fails_analysis_complete_with_exit_1_as_help_and_docs_say(tmp_path):
    def incomplete(d):
        d["errors"] = [{"phase": "recompiles", "message": "timed out after 40 s"}]

    rep = saved_with(tmp_path, "r.json", incomplete)
    code, out, _ = run(tmp_path, "check", "--report", rep, "--max-graph-breaks", "9")
    assert code == 1 and "FAIL  analysis complete: recompiles: timed out" in out
    _, help_text, _ = run(tmp_path, "check", "--help")
    flat = " ".join(help_text.split())
    assert "1 a check failed (an incomplete analysis fails" in flat and "never exits 4" in flat
    ci = (pathlib.Path(ROOT) / "docs" / "ci.md").read_text()
    table = ci[ci.index("## Exit codes") :]
    assert "| 1 |" in table and "incomplete analysis" in table and "| 4 |" not in table


# 3. Testcases named per target


def test_testcases_are_named_per_target_and_two_targets_merge_with_distinct_ids(tmp_path):
    other = saved_with(
        tmp_path, "other.json", lambda d: d.update(target="models/zoo/other.py:build")
    )
    env = plain_env() | {"GITHUB_WORKSPACE": "/work/main"}  # where SAVED's breaks are
    for name, rep in (("a.xml", str(SAVED)), ("b.xml", other)):
        code, _, err = run(
            tmp_path, "check", "--report", rep, "--max-graph-breaks", "0", "--max-recompiles", "0",
            "--junit", name, env=env,
        )  # fmt: skip
        assert code == 1, err
    a, b = suite_of(tmp_path / "a.xml"), suite_of(tmp_path / "b.xml")
    assert {c.classname for c in a} == {"tcdoctor.check.samples.two_breaks.build"}
    assert {c.classname for c in b} == {"tcdoctor.check.models.zoo.other.build"}
    merged = JUnitXml.fromfile(str(tmp_path / "a.xml")) + JUnitXml.fromfile(str(tmp_path / "b.xml"))
    ids = [(c.classname, c.name) for suite in merged for c in suite]
    assert len(ids) == 4 and len(set(ids)) == 4
    (breaks,) = [c for c in a if c.name == "graph breaks"]
    text = breaks.result[0].text.splitlines()
    assert text[1].startswith("/work/main/samples/two_breaks.py:28 Call to")
    assert text[2].startswith("/work/main/samples/two_breaks.py:30 Skip calling")
    # the file on the suite, where Jenkins' schema allows it (test_junit_schema.py); the line in the text
    assert a._elem.get("file") == "samples/two_breaks.py" and breaks._elem.get("file") is None


# 4. The annotations cap


def test_after_ten_of_a_kind_one_notice_says_how_many_more():
    rep = Report.load(str(SAVED))
    first = rep.graph_breaks.unique[0]
    rep.graph_breaks.unique = [GraphBreak(**{**vars(first), "line": n}) for n in range(1, 14)]
    lines = GitHubAnnotations(root="/work/main").render(rep).splitlines()
    warnings = [s for s in lines if s.startswith("::warning ")]
    notices = [s for s in lines if s.startswith("::notice ")]
    assert len(warnings) == 10 and len(notices) == 1
    assert "::3 more warning annotations not shown" in notices[0]
    rep.graph_breaks.unique = rep.graph_breaks.unique[:10]  # the control: ten fit, no notice
    assert "::notice" not in GitHubAnnotations(root="/work/main").render(rep)


# 5. Flags mean what they say


@pytest.mark.parametrize(
    "flags",
    [["--backend", "inductor"], ["--threads", "4"], ["--processes", "3"], ["--budget", "2"]],
)
def test_analysis_options_a_saved_report_was_not_measured_with_are_refused(tmp_path, flags):
    code, _, err = run(tmp_path, "check", "--report", str(SAVED), *flags, "--max-graph-breaks", "9")
    assert code == 2 and flags[0] in one_error_line(err) and "not measured again" in err


def test_an_option_the_saved_report_was_measured_with_is_honoured(tmp_path):
    args = ["check", "--report", str(SAVED), "--backend", "aot_eager", "--threads", "1", "-q"]
    code, out, err = run(tmp_path, *args, "--max-graph-breaks", "9")
    assert code == 0 and "PASS  graph breaks" in out, err


def test_expected_calls_with_report_rederives_the_verdict_as_report_does(tmp_path):
    code, out, _ = run(tmp_path, "report", str(SAVED), "--expected-calls", "1", "--json", "r.json")
    decision = json.loads((tmp_path / "r.json").read_text())["verdict"]["decision"]
    assert decision != Report.load(str(SAVED)).verdict.decision  # the horizon does change it
    args = ["check", "--report", str(SAVED), "--require-verdict", "compile-after-fixes"]
    code, out, _ = run(tmp_path, *args, "--expected-calls", "1")
    assert code == (0 if decision in ("compile", "compile-after-fixes") else 1), out
    assert f"verdict: {decision} " in out
    code, out, _ = run(tmp_path, *args)  # without: the saved verdict
    assert code == 0 and "verdict: compile-after-fixes" in out


@pytest.mark.parametrize(
    "flag",
    [
        "--max-graph-breaks", "--max-recompiles", "--min-speedup", "--max-compile-seconds",
        "--max-memory-ratio",
    ],
)  # fmt: skip
def test_negative_limits_are_refused(tmp_path, flag):
    code, _, err = run(tmp_path, "check", "--report", str(SAVED), flag, "-1")
    assert code == 2 and re.search(r"-1(\.0)? is not in the range", err) and "Traceback" not in err


# 6. diff


def test_diff_exits_1_on_a_regression_and_writes_json_markdown_and_html(tmp_path):
    def gained(d):
        extra = dict(d["graph_breaks"]["unique"][0], line=99, code="y = x.item()")
        d["graph_breaks"]["unique"].append(extra)
        d["graph_breaks"]["count"] += 1

    after = saved_with(tmp_path, "after.json", gained)
    code, out, err = run(
        tmp_path, "diff", str(SAVED), after, "--json", "d.json", "--md", "d.md", "--html", "d.html"
    )
    assert code == 1, out + err
    assert "Regressions: 1" in out and "new graph breaks (vs baseline): 1 new" in out
    assert "\nGraph breaks introduced: 1\n" in out and "HTML diff: d.html" in out
    page = (tmp_path / "d.html").read_text()  # the same sections, drawn by the HTML
    assert "default-src 'none'" in page and "<h2>Graph breaks introduced: 1</h2>" in page
    assert "<h2>Regressions: 1</h2>" in page and "<td>graph breaks</td>" in page
    data = json.loads((tmp_path / "d.json").read_text())
    assert data["regressed"] is True and len(data["introduced"]) == 1
    assert [r["status"] for r in data["regressions"]] == ["FAIL", "PASS", "PASS"]
    md = (tmp_path / "d.md").read_text()
    assert md.startswith("## tcdoctor diff: ") and "### Regressions: 1" in md
    assert run(tmp_path, "diff", str(SAVED), after, "--no-fail")[0] == 0
    assert run(tmp_path, "diff", after, str(SAVED))[0] == 0  # the fix is no regression
    assert run(tmp_path, "diff", str(SAVED), "nope.json")[0] == 2


def test_diff_regressions_are_check_baselines_own_rules():
    old = Report.load(str(SAVED))
    slower = Report.from_dict(json.loads(old.to_json()))
    slower.runtime.speedup_ci = [0.5, 0.6]
    names = [r.name for r in regressions(old, slower) if not r.passed]
    assert names == ["slowdown (vs baseline)"]
    assert [r.status for r in regressions(old, old)] == ["PASS"] * 3


def test_diff_help_documents_its_exit_code(tmp_path):
    _, out, _ = run(tmp_path, "diff", "--help")
    assert "1 a regression" in " ".join(out.split())
    readme = (pathlib.Path(ROOT) / "README.md").read_text()
    assert re.search(r"\| \*\*1\*\* \|[^\n]*`diff` found a regression", readme)
