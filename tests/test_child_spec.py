"""The typed child spec (run/spec.py): what the parent tells each analysis process.

Each role's spec survives the trip through JSON as it was made; a spec file with an unknown or a
missing field, or with another role's field, is refused in one line (and a child handed one exits
70 saying so); and the spec files the launcher and a torchrun launch really write read back as the
children they describe. Those files are made with the launcher's own code and a stand-in for
`subprocess.Popen`, so no child process (and no torch) starts."""

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import ROOT, sample

from tcdoctor.errors import ChildFailed
from tcdoctor.experiments.specs import ConfigFix, ModeSpec
from tcdoctor.options import Options
from tcdoctor.report.processes.regimes import PINNED_ENV_LABEL
from tcdoctor.report.processes.sequential import extra_name
from tcdoctor.run import distributed, launcher, process, stages
from tcdoctor.run.progress import Progress
from tcdoctor.run.spec import (
    ChildSpec,
    ChildSpecError,
    ExperimentRun,
    RankLaunch,
    ServeSpec,
    TimingProcess,
    WarmHandshake,
)

OPTIONS = Options(backend="eager", threads=1, processes=3)
COMMON = {
    "target": "model.py:build",
    "options": OPTIONS,
    "cache_dir": "/w/inductor-cache",
    "dump_after_s": 58.5,
}


def _spec(role: str, tag: str | None = None, **fields) -> ChildSpec:
    tag = tag or role
    paths = {"events_path": f"/w/{tag}.events", "stacks_path": f"/w/{tag}.stacks"}
    return ChildSpec(role=role, **COMMON, **paths, **fields)


ROLES = {
    "cold": _spec("cold", wait_for="/w/warm.ready"),
    "cold, no warm child": _spec("cold"),
    "warm": _spec("warm", warm=WarmHandshake("/w/warm.ready", "/w/warm.go")),
    "timing": _spec(
        "timing", "timing-0", timing=TimingProcess("undecided", "as launched", extra_name(0))
    ),
    "strategy": _spec(
        "strategy", "strategy-0", strategy=ExperimentRun(ModeSpec("max-autotune"), "empty")
    ),
    "fix": _spec(
        "strategy",
        "strategy-1",
        strategy=ExperimentRun(
            ConfigFix("capture_scalar_outputs", addresses=["b1"], before={"speedup": 1.2}),
            "copy of the main analysis's cache",
        ),
    ),
    "serve": _spec(
        "serve",
        "serve-strategy-marked",
        serve=ServeSpec("strategy", 40, 30.0, 1.7e9, strategy="marked"),
    ),
    "proof": _spec(
        "serve", "serve-proof", serve=ServeSpec("proof", 40, 20.0, 1.7e9, warmup=[0, 2])
    ),
    "rank": ChildSpec(
        target="model.py:build",
        role="rank",
        options=Options(backend="eager", nproc=2),
        cache_dir="/w/cache/rank{rank}",
        events_path="/w/cold/rank{rank}.events",
        stacks_path="/w/cold/rank{rank}.stacks",
        distributed=RankLaunch(
            process="warm", deadline_unix=1.7e9, backend="gloo", pid_path="/w/cold/rank{rank}.pid"
        ),
    ),
}


@pytest.mark.parametrize("name", ROLES)
def test_each_roles_spec_round_trips_through_json(name, tmp_path):
    spec = ROLES[name]
    wire = json.loads(json.dumps(spec.to_dict()))
    back = ChildSpec.from_dict(wire)
    assert back == spec and back.to_dict() == wire
    assert isinstance(back.options, Options) and back.options.backend == spec.options.backend
    spec.write(str(tmp_path / "x.spec"))
    assert ChildSpec.read(str(tmp_path / "x.spec")) == spec


def test_every_role_has_its_function_in_the_child():
    from tcdoctor.run import child, spec

    assert set(child._ROLES) == set(spec.ROLES)


def test_the_records_come_back_typed():
    fix = ChildSpec.from_dict(ROLES["fix"].to_dict()).strategy
    assert isinstance(fix.spec, ConfigFix) and fix.spec.before == {"speedup": 1.2}
    assert fix.cache_start.startswith("copy")
    warm = ChildSpec.from_dict(ROLES["warm"].to_dict())
    assert warm.warm.go_path == "/w/warm.go" and warm.wait_for is None and warm.timing is None
    timing = ChildSpec.from_dict(ROLES["timing"].to_dict()).timing
    # the timing record goes into the process's runtime row under these keys (probes/timing.py)
    assert timing.to_dict() == {"why": "undecided", "env": "as launched", "process": extra_name(0)}
    proof = ChildSpec.from_dict(ROLES["proof"].to_dict()).serve
    assert isinstance(proof, ServeSpec) and proof.warmup == [0, 2] and proof.strategy is None


def _one_line_error(d) -> str:
    with pytest.raises(ChildSpecError) as err:
        ChildSpec.from_dict(d)
    message = str(err.value)
    assert "\n" not in message and message.startswith("child spec")
    return message


def test_an_unknown_field_is_refused_in_one_line():
    d = ROLES["cold"].to_dict()
    assert "unknown field(s) 'ready_path'" in _one_line_error({**d, "ready_path": "/w/r"})
    d = ROLES["warm"].to_dict()
    d["warm"]["extra"] = 1
    assert _one_line_error(d) == (
        "child spec's warm: unknown field(s) 'extra' (its fields: ready_path, go_path)"
    )


def test_a_missing_required_field_is_refused_in_one_line():
    d = ROLES["cold"].to_dict()
    del d["target"]
    assert _one_line_error(d) == "child spec: missing field(s) 'target'"
    d = ROLES["rank"].to_dict()
    del d["distributed"]["deadline_unix"]
    assert _one_line_error(d) == "child spec's distributed: missing field(s) 'deadline_unix'"
    d = ROLES["strategy"].to_dict()
    del d["strategy"]["spec"]["mode"]
    assert "lacks mode" in _one_line_error(d)
    d = ROLES["cold"].to_dict()
    d["options"] = {"backend": "eager", "processes": 0}
    assert _one_line_error(d).startswith("child spec's options: ")


def test_a_role_gets_its_own_record_and_no_other():
    with pytest.raises(ChildSpecError, match="the warm role needs field 'warm'"):
        _spec("warm")
    with pytest.raises(ChildSpecError, match="field 'wait_for' is for the cold role, not 'warm'"):
        _spec("warm", wait_for="/w/r", warm=WarmHandshake("/w/r", "/w/g"))
    with pytest.raises(ChildSpecError, match="field 'timing' is for the timing role, not 'cold'"):
        _spec("cold", timing=TimingProcess("w", "e", "p"))
    d = {**ROLES["cold"].to_dict(), "role": "hot"}
    assert "unknown role 'hot'" in _one_line_error(d)
    with pytest.raises(ChildSpecError, match="unknown process 'lukewarm'"):
        RankLaunch(process="lukewarm", deadline_unix=0.0)


def test_a_rank_fills_in_its_rank():
    spec = ROLES["rank"].for_rank(3)
    assert spec.cache_dir == "/w/cache/rank3" and spec.events_path == "/w/cold/rank3.events"
    assert (
        spec.stacks_path == "/w/cold/rank3.stacks"
        and spec.distributed.pid_path == "/w/cold/rank3.pid"
    )
    assert spec.distributed.deadline_unix == 1.7e9 and spec.target == ROLES["rank"].target


def test_a_child_handed_a_bad_spec_says_so_in_one_line(tmp_path):
    path = tmp_path / "cold.spec"
    path.write_text(json.dumps({**ROLES["cold"].to_dict(), "bogus": 1}))
    env = {**os.environ, "PYTHONPATH": ROOT}
    run = subprocess.run(
        [sys.executable, "-m", "tcdoctor.run.child", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 70
    assert run.stderr.strip().splitlines() == [
        "tcdoctor: child spec: unknown field(s) 'bogus' (its fields: target, role, options, "
        "cache_dir, events_path, stacks_path, dump_after_s, wait_for, warm, timing, strategy, "
        "distributed, serve)"
    ]


class _NoProcess:
    """Stands in for subprocess.Popen: the spec file is written, nothing starts, it 'exited' 0."""

    commands: list[list[str]] = []

    def __init__(self, command, **kw):
        self.commands.append(command)
        self.pid = -1

    def poll(self):
        return 0

    def wait(self, timeout=None):
        return 0


@pytest.fixture
def no_process(monkeypatch):
    _NoProcess.commands = []
    monkeypatch.setattr(process.subprocess, "Popen", _NoProcess)
    return _NoProcess


def test_the_launchers_children_read_back(tmp_path, no_process):
    """The cold, warm, timing and strategy specs as analyze_target and its experiments write them."""
    target, work = sample("mlp.py") + ":build", str(tmp_path)
    with pytest.raises(ChildFailed):  # the cold 'child' left no events: died at startup
        launcher.analyze_target(target, OPTIONS, keep_dir=work)
    cache = os.path.join(work, "inductor-cache")
    run = launcher._Experiments(
        target, OPTIONS, work, cache, time.monotonic() + 60, Progress(False)
    )
    started, _ = run._timing_child(0, "why not", pinned=True)
    assert started
    run._child(0, 1, ModeSpec("max-autotune"))
    assert [c[-1] for c in no_process.commands] == [
        os.path.join(work, f"{tag}.spec") for tag in ("warm", "cold", "timing-0", "strategy-0")
    ]
    read = {
        tag: ChildSpec.read(os.path.join(work, f"{tag}.spec"))
        for tag in ("warm", "cold", "timing-0", "strategy-0")
    }
    for tag, spec in read.items():
        assert spec.target == target and spec.options == OPTIONS
        assert spec.events_path == os.path.join(work, f"{tag}.events")
        assert spec.stacks_path == os.path.join(work, f"{tag}.stacks")
        assert spec.dump_after_s is not None
    ready = os.path.join(work, "warm.ready")
    assert read["warm"].warm == WarmHandshake(ready, os.path.join(work, "warm.go"))
    assert read["cold"].role == "cold" and read["cold"].wait_for == ready
    assert read["warm"].cache_dir == read["cold"].cache_dir == read["timing-0"].cache_dir == cache
    assert read["timing-0"].timing == TimingProcess("why not", PINNED_ENV_LABEL, extra_name(0))
    assert read["strategy-0"].strategy == ExperimentRun(ModeSpec("max-autotune"), "empty")
    assert read["strategy-0"].cache_dir == os.path.join(work, "cache-strategy-0")


def test_a_torchrun_launch_writes_one_rank_spec(tmp_path, no_process):
    options = Options(backend="eager", nproc=2, pg_timeout_s=30.0, dist_backend="gloo")
    launch = distributed.Launch(
        "warm", "model.py:build", options, str(tmp_path), time.monotonic() + 60, None
    )
    spec_path = os.path.join(str(tmp_path), "warm", "spec.json")
    assert no_process.commands[-1][-1] == spec_path
    spec = ChildSpec.read(spec_path)
    assert spec == launch.spec and spec.role == "rank"
    assert spec.distributed.process == "warm" and spec.distributed.backend == "gloo"
    assert spec.distributed.timeout_s == 30.0
    assert 0 < spec.distributed.deadline_unix - time.time() <= 60
    one = spec.for_rank(1)
    assert one.events_path == os.path.join(str(tmp_path), "warm", "rank1.events")
    assert one.cache_dir == os.path.join(str(tmp_path), "cache", "rank1")
    assert one.distributed.pid_path == os.path.join(str(tmp_path), "warm", "rank1.pid")


def test_check_targets_questions_reach_every_rank(tmp_path, no_process, monkeypatch):
    """`check TARGET --nproc 2 --baseline B --max-slowdown 10 --min-speedup 1.1`: the questions
    `check` hands its analysis (commands/run.py, checks/questions.py) reach the spec every rank
    reads (RankLaunch.questions), the baseline's processes with them; without a gate, none."""
    from tcdoctor.checks.questions import Questions, SlowdownQuestion
    from tcdoctor.commands.run import _analyse
    from tcdoctor.report.model import Report
    from tcdoctor.report.processes.regimes import decided_on

    work = str(tmp_path / "work")
    monkeypatch.setattr(stages.tempfile, "mkdtemp", lambda prefix: work)
    monkeypatch.setattr(stages.shutil, "rmtree", lambda *a, **k: None)  # keep the specs
    rows = [
        {"process": name, "env": "as launched", "speedup": s, "speedup_ci": [s * 0.98, s * 1.02]}
        for name, s in (("cold", 2.0), ("warm", 2.04), ("third", 1.97))
    ]
    baseline = Report.from_dict({"target": "m.py:build", "runtime": {"processes": rows}})
    options = Options(backend="eager", nproc=2, dist_backend="gloo")
    target = sample("mlp.py") + ":build"
    asked = {"max_slowdown": 10.0, "min_speedup": 1.1}
    for limits, expected in (
        (asked, Questions((1.1,), SlowdownQuestion(tuple(decided_on(rows)), 10.0))),
        ({}, Questions()),
    ):
        with pytest.raises(ChildFailed):  # torchrun 'started' no rank: no events
            _analyse(_check_args(target, limits), options, baseline if limits else None)
        spec = ChildSpec.read(os.path.join(work, "cold", "spec.json"))
        assert spec.role == "rank" and spec.for_rank(1).distributed.questions == expected
    assert expected.slowdown is None and not expected  # the control: no gate, nothing asked


def _check_args(target: str, limits: dict):
    """`check TARGET -q` with `limits` (the report's scope) as click would hand them on: the
    command line as the one `CheckArgs` record `_analyse` reads."""
    from tcdoctor.checks.table import BASELINE, REPORT, SWEEP
    from tcdoctor.commands.run import CheckArgs
    from tcdoctor.render.formats import Outputs

    return CheckArgs(
        target=target,
        report_path=None,
        sweep_dir=None,
        baseline_path=None,
        allow_mismatch=False,
        expected_calls=None,
        quiet=True,
        limits={REPORT: dict(limits), BASELINE: {}, SWEEP: {}},
        analysis={},
        outputs=Outputs.of(),
        junit_path=None,
        annotations=False,
        inconclusive="fail",
    )
