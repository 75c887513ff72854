"""A gross-bias check across processes: two analyses of a conv net each are not shown to differ
from what three independent fresh-process scripts measure with PyTorch's own method
(`blocked_autorange`, benchmarks/by_hand_speedup.py), and their prediction interval holds each
script, with margins.

Its power is low, by design of its sample (a few processes a side), so it catches gross bias only:
simulated with its own Welch comparison (benchmarks/gross_bias_power.py, 4,000 trials), it fails
against a true 10% bias in 17-27% of runs at 5% spread between processes (3-6 processes an
analysis), 65-75% at 2%, 9-12% at 10%; against a 20% bias 74-83% at 5% spread; and 0-2% with
no bias. The test that can fail on a 10% bias is the in-process equivalence test
(tests/test_fidelity_in_process.py: tcdoctor's timing against blocked_autorange within ±5%).

Agreement is a comparison of two samples, not of an interval with a point: the analysis's counted
processes against the three scripts, Welch's 95% interval of the ratio of their typical
(geometric-mean) speedups on the log scale (stats.welch_log_ratio). It fails when that interval
lies wholly outside the issue's 5% band, i.e. when the two methods are shown to differ by more than
5%. The median of three scripts is not exact: on a loaded shared host the scripts alone spread
0.81-0.95 (CI, stop 40), and an interval-holds-the-median check then fails on the scripts' noise.

The scripts pair each round's two sides (the median of the rounds' eager/compiled ratios): this host
runs a call at two speeds in phases of seconds, and the unpaired ratio of medians, whose halves met
different phases, read 0.73-1.13 over 12 runs here where the paired one reads 0.83-0.89 (CI, stop
65: a script read 1.079 beside 0.950 and 0.972, outside the analysis's prediction interval).

aot_eager keeps it cheap (no C++ compile) while the compiled call still differs from eager; one
thread, as every timing test here. Margin for each script in the prediction interval: 15% (a
single fresh process on a shared 2-core machine can sit further out).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tcdoctor import stats

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
        # every stop rule of report/processes/sequential.py; "futile" (more processes would not
        # decide: met in a whole local run) only short of the cap, where the cap itself stops it
        assert seq["stopped"] in ("decided", "futile", "cap", "budget"), seq
        assert seq["stopped"] != "futile" or seq["timed"] < seq["cap"], seq
        assert "confidence interval of the typical" in rt["ci_method"]
        # what another run may see holds every counted process's own figure; a process left out of
        # the headline (`excluded`: timed unlike the timing-only ones, or loaded) is not a draw of
        # it (CI: the warm process read 0.941, its eager 88% above the timing-only processes', and
        # lay above the counted three's interval [0.814, 0.931])
        lo, hi = rt["prediction_interval"]
        own = [
            p["speedup"] for p in rt["processes"] if not p.get("excluded") and not p.get("probe")
        ]
        assert len(own) >= 2, rt["processes"]
        assert lo <= min(own) * 1.01 and hi >= max(own) * 0.99, (rt["prediction_interval"], own)


def test_analyses_agree_with_fresh_process_blocked_autorange_figures(runs):
    analyses, scripts = runs
    for rt in analyses:
        # the typical analysis process and the typical script are not shown to differ by > 5%
        own = [p["speedup"] for p in rt["processes"] if not (p.get("probe") or p.get("excluded"))]
        _, _, lo, hi = stats.welch_log_ratio(own, scripts)
        assert lo <= 1.05 and hi >= 1 / 1.05, ((lo, hi), own, scripts)
        # the prediction interval holds each script
        lo, hi = rt["prediction_interval"]
        for s in scripts:
            assert lo / 1.15 <= s <= hi * 1.15, (rt["prediction_interval"], scripts)
