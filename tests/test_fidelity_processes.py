"""The headline speedup holds in the user's own process: two analyses of a conv net each give a
decision interval holding the median and a prediction interval holding each of what three
independent fresh-process scripts measure with PyTorch's own
method (`blocked_autorange`, benchmarks/by_hand_speedup.py), with margins.

aot_eager keeps it cheap (no C++ compile) while the compiled call still differs from eager; one
thread, as every timing test here. Margins: the issue's 5% for the three scripts' median, 15% for
each script (a single fresh process on a shared 2-core machine can sit further out).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import pytest

# every test here times real calls: under xdist, none runs beside another test (conftest)
pytestmark = pytest.mark.timing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(ROOT, "benchmarks", "smallconv.py") + ":build"
ARGS = ("--backend", "aot_eager", "--threads", "1")


def _analysis(tmp_path, i: int) -> dict:
    out = tmp_path / f"a{i}.json"
    cmd = [sys.executable, "-m", "tcdoctor.cli", "analyze", TARGET, *ARGS, "--no-fixes"]
    cmd += ["--no-compile-remedies", "--budget", "2", "-q", "--json", str(out), "--html", ""]
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True, timeout=600)
    return json.loads(out.read_text())["runtime"]


def _by_hand() -> float:
    cmd = [sys.executable, os.path.join(ROOT, "benchmarks", "by_hand_speedup.py"), TARGET, *ARGS]
    p = subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True, text=True, timeout=600)
    return json.loads(p.stdout.strip().splitlines()[-1])["speedup"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fidelity")
    analyses, scripts = [], []
    for i in range(3):  # interleaved, so drift of the machine hits both sides alike
        if i < 2:
            analyses.append(_analysis(tmp, i))
        scripts.append(_by_hand())
    return analyses, scripts


def test_each_analysis_times_three_processes_or_more_while_undecided(runs):
    for rt in runs[0]:
        names = [p["process"] for p in rt["processes"]]
        seq = rt["sequence"]
        assert names[:3] == ["cold", "warm", "third"] and seq["timed"] == len(names) <= seq["cap"]
        assert seq["stopped"] in ("decided", "cap", "budget")
        assert "confidence interval of the typical" in rt["ci_method"]
        # what another run may see holds every process's own figure
        lo, hi = rt["prediction_interval"]
        own = [p["speedup"] for p in rt["processes"]]
        assert lo <= min(own) * 1.01 and hi >= max(own) * 0.99, (rt["prediction_interval"], own)


def test_intervals_hold_fresh_process_blocked_autorange_figures(runs):
    analyses, scripts = runs
    middle = statistics.median(scripts)
    for rt in analyses:
        # the decision interval holds the typical script, the prediction interval each one
        lo, hi = rt["speedup_ci"]
        assert lo / 1.05 <= middle <= hi * 1.05, (rt["speedup_ci"], scripts)
        lo, hi = rt["prediction_interval"]
        for s in scripts:
            assert lo / 1.15 <= s <= hi * 1.15, (rt["prediction_interval"], scripts)
