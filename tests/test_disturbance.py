"""A CPU-bound program started on one core during one process's timing (issue 34): the report names
the disturbance, and its headline lies within 10% of a quiet analysis of the same model, or the
verdict says it can't tell; it never flips side. Cheap backend, real processes (processes are the
subject here)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from conftest import ROOT, sample

from tcdoctor.report.model import Report
from tcdoctor.report.processes.regimes import load_seen
from tcdoctor.thresholds import RULES

# every test here times real calls: under xdist, none runs beside another test (conftest)
pytestmark = pytest.mark.timing

# burns one core until the test stops it (at the third process's timing line), 120 s at most
BURN = "import time\nt = time.time()\nwhile time.time() - t < 120.0:\n    pass\n"


def _pin_to_core_0() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})


def _analyze(tmp_path, name: str, disturb: bool) -> Report:
    out = tmp_path / f"{name}.json"
    cmd = [
        sys.executable,
        "-m",
        "tcdoctor",
        "analyze",
        sample("python_overhead.py") + ":build",
        *("--backend", "aot_eager", "--no-fixes", "--no-compile-remedies"),
        *("--threads", "2", "--processes", "4", "--budget", "2"),
        *("--json", str(out), "--html", str(tmp_path / f"{name}.html")),
    ]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    burner, burned = None, False
    for line in proc.stderr:
        # the warm process's last phase is done: the third process (the first timing-only one)
        # starts now. Not the third's own progress line: that comes at a redraw, up to a second
        # into its timing (4 s missed it 2 runs in 5)
        if disturb and burner is None and "profile" in line:
            burner = subprocess.Popen(
                [sys.executable, "-c", BURN], preexec_fn=_pin_to_core_0, cwd=ROOT
            )
        # the third's timing is over: the burner covered its start, load, warm-up and timing
        # whatever the host's speed (a fixed 8 s did not: 5 s from the profile line to the third's
        # timing on a quiet host here, and a host 2x slower started timing after the burner had
        # stopped: CI, 2026-11-29). A rerun pair or a replacement process may be loaded too
        if burner is not None and not burned and "timing (timing-only process)" in line:
            burner.kill()
            burned = True
    assert proc.wait(timeout=300) == 0
    if disturb:
        assert burner is not None, "the warm process's profile line never came"
        assert burned, "the third process's timing line never came"
        burner.wait(timeout=30)
    return Report.load(str(out))


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores to hold one")
def test_a_busy_core_during_one_process_is_named_and_never_flips_the_verdict(tmp_path):
    quiet = _analyze(tmp_path, "quiet", disturb=False)
    busy = _analyze(tmp_path, "busy", disturb=True)
    third = next(p for p in busy.runtime.processes if p.process == "third")
    # named: the process's load figures, and the report's own words (excluded, or load seen)
    load = third.load
    assert load and (load.retimed_pairs or 0) + (load.loaded_pairs or 0) > 0, third
    text = json.dumps(busy.runtime.to_dict())
    assert third.excluded or "load seen in the third process" in text
    q, b = quiet.runtime.claim(RULES), busy.runtime.claim(RULES)
    assert q != "undecided", quiet.runtime.speedup_ci
    assert b == q or b == "undecided"
    if b != "undecided":
        assert abs(math.log(busy.runtime.speedup / quiet.runtime.speedup)) <= math.log(1.10)


# A copy's eager calls carry 0.5 ms the object build() returned does not: what tcdoctor's own work
# in an analysis process (its copies, its checks, its compiles) could do to that process's timing,
# planted where it is cheap to see. The timing-only processes call the object build() returned, as
# a plain script does; the analysis processes time eager on a copy.
SLOWED_COPY = """
import copy
import time

import torch
from torch import nn


class Mark:
    def __init__(self, copied=False):
        self.copied = copied

    def __deepcopy__(self, memo):
        return Mark(True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(64, 64), nn.Linear(64, 64)
        self.mark = Mark()

    def forward(self, x):
        if not torch.compiler.is_compiling() and self.mark.copied:
            t = time.perf_counter()
            while time.perf_counter() - t < 5e-4:
                pass
        return self.b(torch.relu(self.a(x)))


def build():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(16, 64),)
"""


def test_an_analysis_process_timed_unlike_the_timing_only_ones_is_named_as_kept_out(tmp_path):
    """Issue 56 item 2, end to end: the cold and warm processes time eager 0.5 ms slower than the
    timing-only processes; the report names each, says by how much on each side and that it was
    left out, and the headline is decided on timing-only processes (two replacements)."""
    target = tmp_path / "slowed_copy.py"
    target.write_text(SLOWED_COPY)
    out = tmp_path / "r.json"
    cmd = [
        sys.executable, "-m", "tcdoctor", "analyze", f"{target}:build",
        *("--backend", "aot_eager", "--no-fixes", "--no-compile-remedies", "--threads", "1"),
        *("--processes", "3", "--budget", "0.3", "-q"),
        *("--json", str(out), "--md", str(tmp_path / "r.md"), "--html", ""),
    ]  # fmt: skip
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, timeout=300)
    report = Report.load(str(out))
    rows = {p.process: p for p in report.runtime.processes}
    loaded = [n for n, p in rows.items() if load_seen(p.load)]
    references = [n for n in rows if n not in ("cold", "warm", *loaded)]
    if any(n in loaded for n in ("cold", "warm")) or not references:
        # the rule judges quiet processes only (load is the disturbed rule's): a busy machine
        # leaves this test without an answer, never a pass or a fail
        pytest.skip(f"load seen in the pairs of {', '.join(loaded)}: not judged, as designed")
    for name in ("cold", "warm"):
        why = rows[name].excluded or ""
        assert why.startswith("timed unlike the timing-only processes (third"), (name, why)
        assert "% above the timing-only processes'" in why and "; compiled " in why
    decided = [p.process for p in rows.values() if not p.excluded and not p.probe]
    assert set(decided) >= {"third"} and not {"cold", "warm"} & set(decided)
    assert "fourth" in rows and "replaces the cold process" in (rows["fourth"].why or "")
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "cold not decided on (timed unlike the timing-only processes" in md
    assert "left out of the headline" in md
