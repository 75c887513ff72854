"""The two-worker test run (tests/conftest.py): the timing tests run on one worker, back to back,
with no other test beside any of them or in a gap between two; other tests run side by side.
Checked on a planted suite of sleeping tests run with `-n 2`, each recording when and where it
ran; the run's shared directory is removed when it ends."""

import os
import shutil
import subprocess
import sys
import tempfile
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
    with open({log!r}, "a") as f:
        shared = os.path.join(tempfile.gettempdir(), "tcdoctor-tests-" + os.environ["PYTEST_XDIST_TESTRUNUID"])
        f.write(f"{{tag}} {{start}} {{time.time()}} {{os.environ['PYTEST_XDIST_WORKER']}} {{os.path.isdir(shared)}}\\n")

def test_1():
    _ran("{name}")

def test_2():
    _ran("{name}")
"""
TIMING = """
@pytest.mark.timing
def test_timed():
    _ran("{name}-timing")
"""


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
    run = f"workers-{os.getpid()}"
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--testrunuid", run, "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        # its own run: never this run's lock (a planted timing test would wait on this very test)
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = [ln.split() for ln in open(log)]
    ran = [(tag, float(s), float(e), w) for tag, s, e, w, _ in rows]
    assert len(ran) == 10
    # the run's shared directory (locks, the timing list) is there while it runs, gone after
    assert {shared for *_, shared in rows} == {"True"}, rows
    assert not os.path.exists(os.path.join(tempfile.gettempdir(), f"tcdoctor-tests-{run}"))
    timed = [r for r in ran if r[0].endswith("-timing")]
    plain = [r for r in ran if not r[0].endswith("-timing")]
    assert len(timed) == 2 and len({r[3] for r in timed}) == 1, timed  # one worker runs them
    # from the first timing test's start to the last one's end, no other test runs
    start, end = min(r[1] for r in timed), max(r[2] for r in timed)
    beside = [r for r in plain if r[1] < end and r[2] > start]
    assert beside == [], (start, end, beside)
    # and two tests did run side by side (the control: the lock does not serialise everything)
    assert any(o[1] < r[2] and o[2] > r[1] for r in plain for o in plain if o is not r), ran
