"""Every JUnit file `tcdoctor check` writes is one Jenkins accepts and junitparser counts right
(issue 35): a passing and a failing check of a saved report, a missing report (exit 2), a target
whose build() raises (exit 3) and `check --sweep`, each validated against the JUnit schema Jenkins
reads (tests/data/junit-jenkins.xsd: the constraints of the xUnit plugin's junit-10.xsd, which allows
no attribute it does not name) and read back by junitparser with the tests, failures and errors the
run had. One real analysis (the raising target, eager backend, stops at build())."""

import pathlib

import pytest
import xmlschema
from conftest import ROOT, plain_env, run_cli
from junitparser import JUnitXml

SAVED = pathlib.Path(ROOT) / "tests" / "data" / "schema1_two_breaks.json"
BAD = pathlib.Path(ROOT) / "tests" / "targets" / "bad.py"
SCHEMA = xmlschema.XMLSchema(str(pathlib.Path(ROOT) / "tests" / "data" / "junit-jenkins.xsd"))


def literal_sweep(folder: pathlib.Path) -> None:
    from tcdoctor.report.sweep import Sweep, SweepRow

    rows = [
        SweepRow(target="models/a.py:build", slug="a", exit_code=0, verdict="compile",
                 graph_breaks=0, recompiles=0, speedup=1.5, speedup_ci=[1.4, 1.6]),
        SweepRow(target="models/raises.py:build", slug="r", exit_code=3, reason="build() raised"),
    ]  # fmt: skip
    folder.mkdir()
    Sweep(options={"backend": "eager"}, targets=[r.target for r in rows], rows=rows).save(
        str(folder / "sweep.json")
    )


CASES = {
    # name: (command line after `check`, exit code, (tests, failures, errors))
    "pass": (["--report", str(SAVED), "--max-graph-breaks", "5", "--max-recompiles", "5"], 0, (2, 0, 0)),
    "fail": (["--report", str(SAVED), "--max-graph-breaks", "0", "--max-recompiles", "0"], 1, (2, 1, 0)),
    "missing report": (["--report", "nope.json", "--max-graph-breaks", "0"], 2, (1, 0, 1)),
    "build raises": ([f"{BAD}:build_raises", "--max-graph-breaks", "0", "--backend", "eager"], 3, (1, 0, 1)),
    "sweep": (["--sweep", "sw", "--min-pass-rate", "0.9"], 1, (1, 1, 0)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_junit_of_every_exit_path_is_valid_for_jenkins_and_counted_by_junitparser(tmp_path, name):
    args, code, (tests, failures, errors) = CASES[name]
    if name == "sweep":
        literal_sweep(tmp_path / "sw")
    rc, out, err = run_cli(tmp_path, "check", *args, "--junit", "j.xml", env=plain_env())
    assert rc == code, out + err
    path = tmp_path / "j.xml"
    # raises, naming the element and attribute, where Jenkins would not read the file
    SCHEMA.validate(str(path))
    (suite,) = list(JUnitXml.fromfile(str(path)))
    assert (suite.tests, suite.failures, suite.errors) == (tests, failures, errors)
    assert len(list(suite)) == tests
    outcomes = [c.result[0]._tag if c.result else "pass" for c in suite]
    assert outcomes.count("failure") == failures and outcomes.count("error") == errors


def test_the_schema_refuses_what_jenkins_refuses(tmp_path):
    """The control: the schema is not a pass-anything: a `file` on a testcase (what tcdoctor wrote
    before) and a suite without its counts are each invalid."""
    rc, _, _ = run_cli(tmp_path, "check", *CASES["fail"][0], "--junit", "j.xml", env=plain_env())
    assert rc == 1
    text = (tmp_path / "j.xml").read_text()
    assert SCHEMA.is_valid(text)
    with_file = text.replace(
        '<testcase name="graph breaks"', '<testcase file="m.py" name="graph breaks"'
    )
    assert with_file != text and not SCHEMA.is_valid(with_file)
    no_counts = text.replace(' errors="0" skipped="0"', ' skipped="0"', 1)
    assert no_counts != text and not SCHEMA.is_valid(no_counts)
