"""Three honest answers (issue 43, items 1 and 7), on saved reports and literal figures, no model
runs: a threshold whose interval straddles it is INCONCLUSIVE (its own line, exit 5, a JUnit
`<skipped>` valid for Jenkins, a step-summary row and a GitHub warning; `--inconclusive pass`
exits 0), pass and fail unchanged; an undecided verdict is "cant-tell", "Can't tell yet" in every
format, valid against the report schema and read back as written."""

import json
import pathlib

import jsonschema
import pytest
import xmlschema
from conftest import ROOT, github_env, plain_env, run_cli
from junitparser import JUnitXml

from tcdoctor import units
from tcdoctor.checks.outcome import CheckResult, counted, gate_exit_code
from tcdoctor.checks.table import run_checks
from tcdoctor.errors import EXIT_CHECK_FAILED, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE
from tcdoctor.report.model import Report, shipped_schema_text

SAVED = pathlib.Path(ROOT) / "tests" / "data" / "schema1_two_breaks.json"
JENKINS = xmlschema.XMLSchema(str(pathlib.Path(ROOT) / "tests" / "data" / "junit-jenkins.xsd"))
SEQUENCE = {
    "cap": 6,
    "looks": 4,
    "looks_at": [3, 4, 5, 6],
    "level": 0.982,
    "thresholds": [1.0, 1.02, 1.05],
}
LINE = (
    "INCONCLUSIVE  speedup (decision interval lower bound): 98.2% decision interval 1.010–1.110× "
    "straddles 1.05× after 6 processes (the cap: --processes 6); counted as a failure "
    "(--inconclusive fail)"
)


def saved(tmp_path, ci, name="r.json", **seq) -> str:
    """SAVED with the headline interval `ci` at 98.2%, timed by 6 processes up to the cap."""
    data = json.loads(SAVED.read_text())
    data["runtime"].update(
        speedup=sum(ci) / 2,
        speedup_ci=list(ci),
        ci_level=0.982,
        sequence={**SEQUENCE, "timed": 6, "stopped": "cap", **seq},
    )
    (tmp_path / name).write_text(json.dumps(data))
    return str(tmp_path / name)


def run(cwd, *args, env=None):
    return run_cli(cwd, *args, timeout=300, env=plain_env() if env is None else env)


def gate_lines(out: str) -> list[str]:
    return [s for s in out.splitlines() if s.startswith(("PASS  ", "FAIL  ", "INCONCLUSIVE  "))]


# 1. The gate's three outcomes


def test_a_straddling_interval_is_inconclusive_with_its_line_exit_junit_and_summary(tmp_path):
    report = saved(tmp_path, (1.01, 1.11))
    args = ["check", "--report", report, "--min-speedup", "1.05", "--max-graph-breaks", "5"]
    code, out, err = run(tmp_path, *args, "--junit", "j.xml", env=github_env(tmp_path))
    assert code == EXIT_INCONCLUSIVE == 5, out + err
    assert gate_lines(out) == ["PASS  graph breaks: 2 (≤ 5 required)", LINE]
    assert "1 passed, 0 failed, 1 inconclusive" in out
    # JUnit: a <skipped> with the reason, valid where Jenkins reads it, counted as skipped
    JENKINS.validate(str(tmp_path / "j.xml"))
    (suite,) = list(JUnitXml.fromfile(str(tmp_path / "j.xml")))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (2, 0, 0, 1)
    speed = next(c for c in suite if c.name == "speedup (decision interval lower bound)")
    (result,) = speed.result
    assert result._tag == "skipped" and result.message == LINE.split(": ", 1)[1]
    assert all(c.is_passed for c in suite if c.name == "graph breaks")
    # GitHub: a warning (never an error), and its row in the step summary's table
    warned = [s for s in out.splitlines() if s.startswith("::warning title=tcdoctor check inc")]
    assert len(warned) == 1 and "straddles 1.05×" in warned[0]
    assert not [s for s in out.splitlines() if s.startswith("::error")]
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## tcdoctor check: 1 passed, 0 failed, 1 inconclusive")
    row = "| ❔ | speedup (decision interval lower bound) | 98.2% decision interval 1.010–1.110× |"
    assert row + " ≥ 1.05 |" in summary


def test_inconclusive_pass_exits_0_and_says_how_it_counted(tmp_path):
    report = saved(tmp_path, (1.01, 1.11))
    args = ["check", "--report", report, "--min-speedup", "1.05", "--junit", "j.xml"]
    code, out, err = run(tmp_path, *args, "--inconclusive", "pass")
    assert code == EXIT_OK, out + err
    (line,) = gate_lines(out)
    assert line == LINE.replace("a failure (--inconclusive fail)", "a pass (--inconclusive pass)")
    JENKINS.validate(str(tmp_path / "j.xml"))
    assert next(iter(JUnitXml.fromfile(str(tmp_path / "j.xml")))).skipped == 1
    # the default, said in the help
    _, help_text, _ = run(tmp_path, "check", "--help")
    flat = " ".join(help_text.split())
    assert "--inconclusive [fail|pass]" in flat and "5 none failed but one was inconclusive" in flat
    assert "[default: fail]" in flat.split("--inconclusive [fail|pass]")[1].split(" --")[0]


@pytest.mark.parametrize(
    "ci, code, line",
    [
        # pass: the lower bound at or above X, as before (the level judged in the line)
        (
            (1.06, 1.2),
            0,
            "PASS  speedup (decision interval lower bound): 1.060×, the lower bound of the 98.2% "
            "decision interval 1.060–1.200× (≥ 1.05 required)",
        ),
        # fail: the whole interval below X, as before
        (
            (0.9, 1.04),
            1,
            "FAIL  speedup (decision interval lower bound): 98.2% decision interval 0.900–1.040× "
            "lies below 1.05× (≥ 1.05 required)",
        ),
    ],
)
def test_pass_and_fail_are_unchanged(tmp_path, ci, code, line):
    report = saved(tmp_path, ci)
    for policy in ("fail", "pass"):
        rc, out, err = run(
            tmp_path, "check", "--report", report, "--min-speedup", "1.05", "--inconclusive", policy
        )
        assert rc == code and gate_lines(out) == [line], out + err


def test_a_failure_beside_an_inconclusive_exits_1_and_an_error_2():
    ok = CheckResult("a", "1", "≤ 1", True, "1")
    bad = CheckResult("b", "2", "≤ 1", False, "2")
    unsure = CheckResult("c", "x", "≥ 1", False, "x", inconclusive=True)
    broken = CheckResult("d", "x", "", False, "x", error=True)
    assert unsure.status == "INCONCLUSIVE" and not unsure.failed and bad.failed
    assert gate_exit_code([ok, unsure]) == EXIT_INCONCLUSIVE
    assert gate_exit_code([ok, unsure], "pass") == EXIT_OK
    assert gate_exit_code([unsure, bad], "pass") == gate_exit_code([unsure, bad]) == 1
    assert gate_exit_code([unsure, bad, broken]) == EXIT_USAGE
    assert gate_exit_code([ok]) == EXIT_OK and EXIT_CHECK_FAILED == 1
    (said,) = counted([unsure])
    assert said.reason == "x; counted as a failure (--inconclusive fail)"
    assert counted([ok], "pass") == [ok]


def test_why_the_processes_stopped_is_in_the_line(tmp_path):
    def reason(**seq) -> str:
        (r,) = run_checks(Report.load(saved(tmp_path, (1.01, 1.11), **seq)), min_speedup=1.05)
        assert r.inconclusive
        return r.reason

    assert reason().endswith("after 6 processes (the cap: --processes 6)")
    assert reason(stopped="budget", timed=4).endswith(
        "after 4 processes (the time budget ran out before the cap of 6)"
    )
    asked_less = reason(stopped="decided", timed=3, thresholds=[1.0, 1.02])
    assert "after 3 processes (they stopped once the verdict's question was answered" in asked_less
    assert "`check TARGET --min-speedup 1.05` times until it is answered" in asked_less


def test_an_interval_without_its_upper_bound_stays_pass_or_fail():
    rep = Report.load(str(SAVED))
    rep.runtime.speedup_ci = [1.01, None]
    (r,) = run_checks(rep, min_speedup=1.05)
    assert r.status == "FAIL" and not r.inconclusive


# 2. "Can't tell yet": its own decision


def cant_tell_report(tmp_path) -> Report:
    from tcdoctor.verdict import with_verdict

    return with_verdict(Report.load(saved(tmp_path, (1.01, 1.11))))


def test_an_undecided_verdict_is_cant_tell_in_every_format(tmp_path):
    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.render.terminal import TerminalRenderer

    rep = cant_tell_report(tmp_path)
    assert rep.verdict.decision == "cant-tell"
    assert "can't tell at this precision" in rep.verdict.reasons[0]
    assert units.decision_text("cant-tell") == "Can't tell yet"
    assert "VERDICT: Can't tell yet" in TerminalRenderer().render(rep)
    assert "## tcdoctor: Can't tell yet" in MarkdownRenderer().render(rep)
    html = HtmlRenderer().render(rep)
    assert '<div class="verdict cant-tell">' in html and "Can&#39;t tell yet" in html
    assert ".tcd .cant-tell{" in html  # the heading has its own style
    for text in (TerminalRenderer().render(rep), MarkdownRenderer().render(rep), html):
        assert "compile it (yet)" not in text.lower()
    # the control: the same report with an interval wholly below 1.02 is "Don't compile it (yet)"
    from tcdoctor.verdict import with_verdict

    below = with_verdict(Report.load(saved(tmp_path, (0.9, 0.99), name="below.json")))
    assert below.verdict.decision == "dont-compile"


def test_cant_tell_validates_against_the_schema_and_round_trips(tmp_path):
    rep = cant_tell_report(tmp_path)
    data = json.loads(rep.to_json())
    jsonschema.Draft202012Validator(json.loads(shipped_schema_text())).validate(data)
    assert '"cant-tell"' in json.loads(shipped_schema_text())["$defs"]["Verdict"]["description"]
    path = tmp_path / "again.json"
    path.write_text(rep.to_json())
    again = Report.load(str(path))
    assert again.verdict.decision == "cant-tell" and again.to_json() == rep.to_json()


def test_require_verdict_on_cant_tell_is_inconclusive(tmp_path):
    rep = cant_tell_report(tmp_path)
    path = tmp_path / "cant.json"
    path.write_text(rep.to_json())
    code, out, err = run(tmp_path, "check", "--report", str(path), "--require-verdict", "compile")
    assert code == EXIT_INCONCLUSIVE, out + err
    (line,) = gate_lines(out)
    assert line.startswith("INCONCLUSIVE  verdict: cant-tell (Can't tell yet: the speed is undec")
    # the control: a dont-compile verdict fails it
    below = saved(tmp_path, (0.5, 0.6), name="below.json")
    code, out, _ = run(tmp_path, "check", "--report", below, "--require-verdict", "compile")
    assert code == 1 and gate_lines(out)[0].startswith("FAIL  verdict: compile-after-fixes")


def test_the_sweep_overview_names_cant_tell():
    from tcdoctor.render.sweep import sort_values
    from tcdoctor.render.terminal import TerminalRenderer
    from tcdoctor.report.sweep import Sweep, SweepRow

    rows = [
        SweepRow(target="a.py:build", slug="a", exit_code=0, verdict="cant-tell",
                 graph_breaks=0, recompiles=0, speedup=1.03, speedup_ci=[0.98, 1.09]),
        SweepRow(target="b.py:build", slug="b", exit_code=0, verdict="dont-compile",
                 graph_breaks=0, recompiles=0, speedup=0.8, speedup_ci=[0.7, 0.9]),
    ]  # fmt: skip
    sweep = Sweep(options={}, targets=[r.target for r in rows], rows=rows)
    shown = TerminalRenderer().render_sweep(sweep)
    assert "Can't tell yet: 1" in shown and "Don't compile it (yet): 1" in shown
    assert sort_values(rows[0])[3] < sort_values(rows[1])[3]


def test_threads_beyond_the_free_cores_are_named_with_what_to_do():
    """Two threads on two cores with another program taking one: the reasons say OpenMP threads
    waited on each other and name --threads 1; on a quiet machine (or one thread) nothing is said."""
    from dataclasses import replace

    from tcdoctor.thresholds import RULES
    from tcdoctor.verdict.decision import decision, thread_reason
    from tcdoctor.verdict.figures import Figures

    loaded = Figures(speedup=1.0, ci_low=0.5, ci_high=2.0, threads=2, cpu_count=2, others_cores=0.9)
    text = thread_reason(loaded)
    assert text and "OpenMP threads" in text and "--threads 1" in text
    assert text in decision(loaded, RULES)[1]
    assert thread_reason(replace(loaded, others_cores=0.2)) is None  # quiet: no claim
    assert thread_reason(replace(loaded, threads=1)) is None  # one thread fits the free core
    assert thread_reason(replace(loaded, cpu_count=8)) is None  # cores to spare
    # the machine full (the step's own CPU use and the others'): named; idle cores left: not
    assert thread_reason(replace(loaded, idle_cores=0.1)) == text
    assert thread_reason(replace(loaded, idle_cores=1.2)) is None


def test_a_gpu_step_on_a_quiet_16_core_machine_gets_no_thread_advice_and_no_load():
    """Issue 50: 16 threads, one core of others, the step waiting on its GPU (one core busy): 14
    cores idle, so no thread advice and no process counted as loaded; the same figures without
    idle cores read (a report from before) keep the old rule."""
    from dataclasses import replace

    from tcdoctor.report.processes.regimes import loaded_share, under_load
    from tcdoctor.verdict.decision import thread_reason
    from tcdoctor.verdict.figures import Figures

    gpu = Figures(speedup=1.0, ci_low=0.9, ci_high=1.1, threads=16, cpu_count=16, others_cores=1.0)
    assert "--threads 15" in thread_reason(gpu)  # the old reading, no idle figure
    assert thread_reason(replace(gpu, idle_cores=14.0)) is None
    quiet = {"other_cores_median": 1.0, "idle_cores_median": 14.0, "loaded_pairs": 0}
    row = {"process": "cold", "samples": 19, "load": quiet}
    assert loaded_share(row) == 0.0 and under_load([row]) is None
    full = {**quiet, "idle_cores_median": 0.2}
    assert loaded_share({**row, "load": full}) == 1.0
    assert under_load([{**row, "load": full}]).sustained


def test_an_undecided_speed_that_could_never_repay_the_compile_is_dont_compile():
    """Can't tell needs the speed to matter: with a first call longer than the expected calls'
    whole eager time, not even an infinitely fast compiled call repays it, so the answer is
    decided (don't compile) and the reason says why; with a long horizon it is can't tell."""
    from tcdoctor.thresholds import RULES
    from tcdoctor.verdict.decision import decision
    from tcdoctor.verdict.figures import Figures

    fig = Figures(speedup=1.0, ci_low=0.8, ci_high=1.25, eager_s=1e-4, compiled_s=1e-4, cold_s=2.0)
    short, reasons = decision(fig, RULES.replace(expected_calls=1))
    assert short == "dont-compile" and "infinitely fast" in reasons[-1]
    assert decision(fig, RULES.replace(expected_calls=10**9))[0] == "cant-tell"


def test_a_sweep_names_the_targets_timed_under_load_and_marks_their_speedups(tmp_path):
    """Rows read from saved reports: the serving sample's speedup was timed under sustained load
    (its `runtime.load.sustained`), two_breaks' was not. The loaded row says so (`timed_under_load`,
    its speedup cell ", timed under load") and the overview's notes name it, in every format; the
    quiet row's JSON has no such key (old overviews read as before)."""
    import json

    from conftest import saved_report

    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.render.terminal import TerminalRenderer
    from tcdoctor.report.model import Report
    from tcdoctor.report.sweep import Sweep, row_from_report

    loaded = Report.load(str(saved_report("serving")))
    quiet = Report.load(str(saved_report("two_breaks")))
    assert loaded.runtime.load.sustained and not (
        quiet.runtime.load and quiet.runtime.load.sustained
    )
    rows = [row_from_report("s.py:build", loaded, 0, 3.0, "s"),
            row_from_report("q.py:build", quiet, 0, 2.0, "q")]  # fmt: skip
    assert rows[0].timed_under_load is True and rows[1].timed_under_load is None
    assert "timed_under_load" not in rows[1].to_dict()
    sweep = Sweep(options={}, targets=[r.target for r in rows], rows=rows)
    back = Sweep.from_dict(json.loads(json.dumps(sweep.to_dict())))
    assert [r.timed_under_load for r in back.rows] == [True, None]
    for renderer in (TerminalRenderer(), MarkdownRenderer(), HtmlRenderer()):
        shown = renderer.render_sweep(back)
        assert shown.count("(95% CI 0.19–0.25), timed under load") == 1
        assert "1 of 2 target(s) had their speedup timed under load (s.py:build)" in shown
    assert back.load_notes and "q.py:build" not in back.load_notes[0]
    rows[0].timed_under_load = None  # no loaded row: no note
    assert Sweep(options={}, targets=[], rows=rows).load_notes == []
