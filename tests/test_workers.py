"""The README's test command (tests/conftest.py): the timing tests run first, in a pytest run of
their own without workers, one after another and before any other test; the others then run side
by side on two pytest-xdist workers, which share a directory (shared analyses) removed when the run
ends. Checked on a planted suite of sleeping tests run with the README's own pytest commands, each
test recording when and where it ran."""

import os
import shlex
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

TEST = """
import os
import tempfile
import time
import pytest

def _ran(tag):
    start = time.time()
    time.sleep(0.5)
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    shared = os.path.join(tempfile.gettempdir(), "tcdoctor-tests-" + run) if run else "-"
    worker = os.environ.get("PYTEST_XDIST_WORKER", "-")
    with open({log!r}, "a") as f:
        f.write(f"{{tag}} {{start}} {{time.time()}} {{worker}} {{shared}} {{os.path.isdir(shared)}}\\n")

def test_1(shared_analysis):
    _ran("{name}")

def test_2(shared_analysis):
    _ran("{name}")
"""
TIMING = """
@pytest.mark.timing
def test_timed():
    _ran("{name}-timing")
"""


def readme_pytest_commands() -> list[list[str]]:
    """The pytest commands of the README's test command, with this interpreter, on folder `.`."""
    readme = open(f"{ROOT}/README.md", encoding="utf-8").read().splitlines()
    (line,) = [s for s in readme if s.startswith("    python3 -m venv") and "pytest" in s]
    steps = [shlex.split(step) for step in line.split(" && ") if " -m pytest " in step]
    return [[sys.executable, *step[1:-1], "."] for step in steps if step[-1] == "tests"]


def test_timing_tests_run_back_to_back_on_one_worker_and_alone(tmp_path):
    pytest.importorskip("xdist")
    shutil.copy(f"{ROOT}/tests/conftest.py", tmp_path)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\naddopts = --dist loadfile -p no:cacheprovider\nmarkers = timing: alone\n"
    )
    log = str(tmp_path / "ran.log")
    for name in "abcd":
        body = TEST.format(log=log, name=name) + (TIMING.format(name=name) if name in "bd" else "")
        (tmp_path / f"test_{name}.py").write_text(textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}  # its own run
    commands = readme_pytest_commands()
    assert len(commands) == 2 and "-n" not in commands[0], commands  # timing first, no workers
    for cmd in commands:
        p = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = [ln.split() for ln in open(log)]
    ran = [(tag, float(s), float(e), w) for tag, s, e, w, *_ in rows]
    assert len(ran) == 10  # every test once: `timing`, then `not timing`
    timed = [r for r in ran if r[0].endswith("-timing")]
    plain = [r for r in ran if not r[0].endswith("-timing")]
    assert len(timed) == 2 and {r[3] for r in timed} == {"-"}, timed  # no worker beside them
    assert max(r[2] for r in timed) <= min(r[1] for r in plain), ran  # all before any other
    assert {r[3] for r in plain} == {"gw0", "gw1"}, plain
    # the workers' shared directory is there while they run, gone after
    shared = {(path, there) for tag, *_, path, there in rows if not tag.endswith("-timing")}
    ((folder, there),) = shared  # one folder for both workers
    assert there == "True" and not os.path.exists(folder), rows
    # and two tests did run side by side (the control: the second run is not one after another)
    assert any(o[1] < r[2] and o[2] > r[1] for r in plain for o in plain if o is not r), ran


def test_heavy_files_are_handed_out_first_then_most_tests_first():
    """The workers' collection order (conftest.heavy_first), which the controller keeps
    (`loadscopereorder` off): the listed files first, in the list's order, then the others with
    the most tests first; each file's tests together and in their own order. Every listed file
    exists (a renamed one would silently go back to the end)."""
    from types import SimpleNamespace

    import conftest

    assert all(os.path.isfile(f"{ROOT}/tests/{name}") for name in conftest.HEAVY_FIRST)
    heavy, second = conftest.HEAVY_FIRST[:2]
    ids = ["tests/test_a.py::t1", f"tests/{second}::x", "tests/test_b.py::t1"]
    ids += ["tests/test_b.py::t2", f"tests/{heavy}::y", f"tests/{second}::z", "tests/test_a.py::t0"]
    got = [i.nodeid for i in conftest.heavy_first([SimpleNamespace(nodeid=n) for n in ids])]
    assert got == [
        f"tests/{heavy}::y",
        f"tests/{second}::x",
        f"tests/{second}::z",
        "tests/test_a.py::t1",  # two tests, collected before test_b's two
        "tests/test_a.py::t0",
        "tests/test_b.py::t1",
        "tests/test_b.py::t2",
    ]
