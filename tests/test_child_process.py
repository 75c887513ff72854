"""The one child-process mechanism (run/process.py): spec, environment, session, deadline, kill, wording."""

import json
import os
import signal
import sys
import time

import pytest

from tcdoctor.errors import EXIT_USAGE, EXIT_USER_CODE, TargetError, UserCodeError
from tcdoctor.options import Options
from tcdoctor.report.events import Event
from tcdoctor.run import process
from tcdoctor.run.process import ChildProcess
from tcdoctor.run.spec import ChildSpec

DUMP_ENV = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'))"
SPEC = ChildSpec(
    target="t.py:build",
    role="cold",
    options=Options(backend="eager"),
    cache_dir="/cache",
    events_path="/x/cold.events",
    stacks_path="/x/cold.stacks",
)


def start(tmp_path, code, *args, **kw):
    return ChildProcess(
        [sys.executable, "-c", code, *args],
        SPEC,
        str(tmp_path / "spec.json"),
        str(tmp_path / "child.log"),
        **kw,
    )


def test_spec_is_written_and_the_environment_is_set(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("TORCH_TRACE", "/users/own")
    out = tmp_path / "env.json"
    child = start(
        tmp_path,
        DUMP_ENV,
        str(out),
        cache_dir="/cache",
        trace_dir="/trace/cold",
        extra_env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    )
    assert child.exit_code() == 0
    assert json.loads((tmp_path / "spec.json").read_text()) == SPEC.to_dict()
    assert ChildSpec.read(str(tmp_path / "spec.json")) == SPEC
    env = json.loads(out.read_text())
    assert env["PYTHONPATH"] == process.PACKAGE_PARENT + os.pathsep + "/elsewhere"
    assert os.path.isdir(os.path.join(process.PACKAGE_PARENT, "tcdoctor"))
    assert env["TORCHINDUCTOR_CACHE_DIR"] == "/cache" and env["TORCH_TRACE"] == "/trace/cold"
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert env["PYTHONUNBUFFERED"] == "1"


@pytest.mark.parametrize("keep", [True, False])
def test_a_users_torch_trace_is_kept_or_removed(tmp_path, monkeypatch, keep):
    monkeypatch.setenv("TORCH_TRACE", "/users/own")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    out = tmp_path / "env.json"
    assert start(tmp_path, DUMP_ENV, str(out), keep_user_trace=keep).exit_code() == 0
    env = json.loads(out.read_text())
    assert env.get("TORCH_TRACE") == ("/users/own" if keep else None)
    assert "TORCHINDUCTOR_CACHE_DIR" not in env  # a launch's ranks set their own


def test_the_deadline_kills_the_whole_process_group(tmp_path):
    """A grandchild in the same session dies with its parent: nothing outlives the analysis."""
    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    child = start(tmp_path, code)
    ticks = []
    t0 = time.monotonic()
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() - t0 < 30
        time.sleep(0.02)
    child.wait(time.monotonic() + 0.5, tick=lambda: ticks.append(1), every_s=0.05)
    assert child.timed_out and not child.running() and ticks
    assert child.exit_code() == -signal.SIGKILL
    grandchild = int(pid_file.read_text())
    for _ in range(100):  # reaped by init once killed; gone or a zombie
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{grandchild}/stat") as fh:
            if fh.read().split(") ")[1].startswith("Z"):
                break
        time.sleep(0.02)
    else:
        pytest.fail("the grandchild outlived the kill")


def test_a_grace_period_sends_sigterm_first(tmp_path):
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    child = start(tmp_path, code, term_grace_s=10.0)
    t0 = time.monotonic()
    while "ready" not in (tmp_path / "child.log").read_text():
        assert time.monotonic() - t0 < 30
        time.sleep(0.02)
    child.kill()
    assert child.timed_out and child.exit_code() == 7


def test_a_child_that_exits_in_time_is_not_timed_out(tmp_path):
    child = start(tmp_path, "print('out'); raise SystemExit(3)")
    child.wait(time.monotonic() + 60)
    assert not child.timed_out and child.exit_code() == 3 and child.log_tail(8) == "out"


def test_each_failure_has_one_wording():
    assert process.ended(17) == "exited with code 17"
    assert process.ended(-signal.SIGSEGV) == "was killed by SIGSEGV"
    assert process.ended(-signal.SIGKILL) == (
        "was killed by SIGKILL (out of memory, or killed from outside)"
    )
    where = {"file": "/x/model.py", "line": 3, "function": "forward"}
    assert process.timed_out_message(25, "recompiles", None) == (
        "timed out: the 25s limit ran out during phase 'recompiles'"
    )
    assert process.exited_message(17, "graph_breaks", where).startswith(
        "the analysis process exited with code 17 during phase 'graph_breaks'"
    )


def test_events_say_where_a_child_stopped(tmp_path):
    events = [
        Event(event="start", phase="eager"),
        Event(event="done", phase="eager", data={"x": 1}),
        Event(event="start", phase="compile"),
    ]
    assert process.done(events, "eager") == {"x": 1} and process.done(events, "compile") is None
    assert not process.finished(events)
    assert process.stopped_at(events, str(tmp_path / "missing.stacks")) == ("compile", None)
    assert process.stopped_at([], str(tmp_path / "missing.stacks")) == ("startup", None)
    assert process.finished(events + [Event(event="end")])
    assert process.finished([Event(event="failed", phase="load", fatal=True)])
    load, end, memory = Event(phase="load"), Event(event="end"), Event(phase="memory")
    assert process.measured([load, end, memory]) == [memory]


def test_a_fatal_record_raises_the_matching_error():
    assert isinstance(process.fatal_error("m", EXIT_USER_CODE), UserCodeError)
    err = process.fatal_error("m", None)
    assert isinstance(err, TargetError) and err.exit_code == EXIT_USAGE


def test_the_stack_dump_comes_before_the_deadline():
    now = time.monotonic()
    assert process.stack_dump_after(now + 10, margin_s=1.5, min_left_s=3) == pytest.approx(
        8.5, abs=0.1
    )
    assert process.stack_dump_after(now + 2, margin_s=1.5, min_left_s=3) is None
