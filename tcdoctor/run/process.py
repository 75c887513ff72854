"""One child process of an analysis, as the parent sees it: started, watched against a deadline,
killed, and how it ended in the report's words.

Every analysis process runs apart from the parent (`python -m tcdoctor.run.child SPEC` for a
single-process child, torchrun for a distributed launch) so a crash, hang or OOM costs only the
phase it was in. Each reads its instructions from a spec file (a ChildSpec, run/spec.py) and
streams its phase events to a file of its own (run/stream.py); the parent never imports torch.
`ChildProcess` is the one way to start and stop such a process: spec file, environment, own
session (so one killpg stops everything it started), deadline, process-group kill. The functions
below read what a child left behind (its events, its faulthandler stack dump, its log) and word
each failure once, so a single-process child and a rank of a distributed launch report a timeout,
a crash, an OOM kill or an exit code in the same words.
"""

from __future__ import annotations

import math
import os
import re
import select
import signal
import subprocess
import sys
import time
from typing import Any, Callable

from ..errors import (
    EXIT_INTERNAL,
    EXIT_USAGE,
    EXIT_USER_CODE,
    ChildFailed,
    TargetError,
    TcdoctorError,
    UserCodeError,
)
from ..report.events import ENDS, Event
from ..target.userframes import deepest_user_frame, where_str
from .spec import ChildSpec

# How often the parent checks on running children where it cannot block until one exits (no
# pidfd: not Linux); on Linux it blocks (wait_exit) and wakes only on an exit or its next duty.
POLL_S = 0.02
PROGRESS_EVERY_S = 0.2  # how often the parent re-reads event files for progress (when it is shown)
# ... and while a child times calls: each wake-up of the parent takes a core from a timed thread
# (the timed process runs as many threads as it was given cores)
TIMED_PROGRESS_EVERY_S = 1.0
OUTPUT_TAIL_CHARS = 2000  # the most of a child's own output a failure record carries

# The folder that holds this package: put first on the child's PYTHONPATH so the child imports
# this very tcdoctor, wherever the parent was started from.
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_FH_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


def child_command(spec_path: str) -> list[str]:
    """The command of one single-process analysis child (run/child.py)."""
    return [sys.executable, "-m", "tcdoctor.run.child", spec_path]


def stack_dump_after(deadline: float, margin_s: float, min_left_s: float) -> float | None:
    """Seconds after which the child dumps its stacks (faulthandler), `margin_s` before the deadline
    kills it, so a hang names its line; None when less than `min_left_s` is left."""
    remaining = deadline - time.monotonic()
    return max(0.5, remaining - margin_s) if remaining > min_left_s else None


class ChildProcess:
    """A started child: its spec file (a ChildSpec), its log (stdout and stderr), its process group."""

    def __init__(
        self,
        command: list[str],
        spec: ChildSpec,
        spec_path: str,
        log_path: str,
        *,
        cache_dir: str | None = None,
        trace_dir: str | None = None,
        keep_user_trace: bool = True,
        extra_env: dict[str, str] | None = None,
        term_grace_s: float = 0.0,
    ):
        """`spec` (run/spec.py) is written to `spec_path` before the start (the child reads it first).

        Environment: the parent's, plus `extra_env` (a tried fix that lives there:
        tried.allocator_fixes), unbuffered output, this package first on PYTHONPATH,
        TORCHINDUCTOR_CACHE_DIR=`cache_dir` and TORCH_TRACE=`trace_dir` (--torch-trace: one folder
        per process, tlparse.py) where given. With no `trace_dir`, `keep_user_trace=False` removes
        a TORCH_TRACE the user's environment holds (a distributed run's traces are tcdoctor's own:
        --no-torch-trace means none). The thread count travels in the spec's options (the child
        calls torch.set_num_threads before compiling), not in the environment.

        `term_grace_s`: on a kill, SIGTERM first and this long to stop (torchrun stops its workers
        then); 0 kills at once."""
        spec.write(spec_path)
        env = {**os.environ, **(extra_env or {}), "PYTHONUNBUFFERED": "1"}
        if cache_dir is not None:
            env["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
        env["PYTHONPATH"] = PACKAGE_PARENT + (
            os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
        )
        if trace_dir:
            env["TORCH_TRACE"] = trace_dir
        elif not keep_user_trace:
            env.pop("TORCH_TRACE", None)
        self.command, self.log_path, self.term_grace_s = command, log_path, term_grace_s
        self.timed_out = False
        self._log = open(log_path, "w")  # noqa: SIM115 - closed in exit_code()
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: one killpg stops all it started
        )

    def running(self) -> bool:
        return self.proc.poll() is None

    def kill(self, timed_out: bool = True) -> None:
        """Stop the whole process group (SIGTERM first when it has a grace period, then SIGKILL)."""
        self.timed_out = timed_out
        if self.term_grace_s > 0:
            _signal_group(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.term_grace_s)
                return
            except subprocess.TimeoutExpired:
                pass
        _signal_group(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def wait(
        self,
        deadline: float,
        tick: Callable[[], None] | None = None,
        every_s: float = TIMED_PROGRESS_EVERY_S,
    ) -> None:
        """Block until it exits or the deadline passes (then kill it as timed out); call `tick`
        every `every_s` (the child times calls for most of its life: TIMED_PROGRESS_EVERY_S)."""
        while self.running():
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill(timed_out=True)
                return
            wait_exit([self], min(left, every_s) if tick else left)
            if tick and self.running():
                tick()

    def exit_code(self) -> int:
        """Wait for the exit and close the log: the exit code (negative: the signal that killed it)."""
        rc = self.proc.wait()
        self._log.close()
        return rc

    def log_tail(self, lines: int) -> str:
        """The last `lines` lines of its output."""
        return tail(self.log_path, lines)


def wait_exit(children: list[ChildProcess], timeout_s: float) -> None:
    """Block until one of `children` exits or `timeout_s` passes, with no wake-up in between.

    Method: a pidfd per child (Linux 5.3+: os.pidfd_open), readable once the child exits, and one
    poll() on them all. Popen.wait(timeout) instead sleeps and re-checks every few to 50 ms, and a
    sleep loop wakes at its period: each wake-up of the parent takes a core from a child's timed
    threads. A child that already exited (reaped: no pid left) returns at once. Where there is no
    pidfd, it sleeps POLL_S (or less) once: the caller's loop is then a poll."""
    if not children:
        return
    fds: list[int] = []
    try:
        for child in children:
            fds.append(os.pidfd_open(child.proc.pid))
    except ProcessLookupError:  # gone already: nothing to wait for
        timeout_s = 0.0
    except (AttributeError, OSError):  # no pidfd here
        _close(fds)
        time.sleep(max(0.0, min(timeout_s, POLL_S)))
        return
    try:
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        poller.poll(max(0, math.ceil(timeout_s * 1000)))
    finally:
        _close(fds)


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


# -- what a child left behind ------------------------------------------------------------------
def done(events: list[Event], phase: str) -> Any:
    """The data of a phase that finished, or None."""
    return next((ev.data for ev in events if ev.is_done(phase)), None)


def measured(events: list[Event]) -> list[Event]:
    """A later child's events minus its bookkeeping (its own load and end records)."""
    return [ev for ev in events if ev.phase != "load" and ev.event != "end"]


def finished(events: list[Event]) -> bool:
    """It wrote its end record, or a fatal one (a target error, said by the parent in one line)."""
    return any(ev.event == "end" or ev.fatal for ev in events)


def last_started(events: list[Event]) -> str | None:
    """The phase that was running when the events stop (started, never done, failed or skipped)."""
    open_phase = None
    for ev in events:
        if ev.event == "start":
            open_phase = ev.phase
        elif ev.event in ENDS and ev.phase == open_phase:
            open_phase = None
    return open_phase


def stopped_at(events: list[Event], stacks_path: str) -> tuple[str, dict | None]:
    """Where a child that ended without finishing stopped: its open phase ('startup' before its
    first), and the deepest frame of the user's code in its stack dump."""
    return last_started(events) or "startup", where_from_stacks(stacks_path)


def where_from_stacks(path: str) -> dict | None:
    """The deepest user frame of a faulthandler dump (written on a crash, or before the deadline)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    frames = [(m["file"], int(m["line"]), m["func"]) for m in _FH_FRAME.finditer(text)]
    return deepest_user_frame(reversed(frames))  # faulthandler prints the most recent call first


def tail(path: str, lines: int = 8) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return "".join(fh.readlines()[-lines:]).strip()
    except OSError:
        return ""


# -- each failure in one wording ---------------------------------------------------------------
def ended(rc: int) -> str:
    """How a process ended: 'was killed by SIGSEGV', 'exited with code 17'. SIGKILL is what the
    kernel's OOM killer sends, hence the hint."""
    if rc >= 0:
        return f"exited with code {rc}"
    try:
        sig = signal.Signals(-rc).name
    except ValueError:
        sig = str(-rc)
    cause = " (out of memory, or killed from outside)" if -rc == signal.SIGKILL else ""
    return f"was killed by {sig}{cause}"


def timed_out_message(timeout_s: float, phase: str, where: dict | None) -> str:
    return f"timed out: the {timeout_s:g}s limit ran out during phase '{phase}'{where_str(where)}"


def exited_message(rc: int, phase: str, where: dict | None) -> str:
    return f"the analysis process {ended(rc)} during phase '{phase}'{where_str(where)}"


def fatal_error(message: str, exit_code: int | None) -> TcdoctorError:
    """The one-line error a child's fatal record stands for: the user's code raised before anything
    was measured (exit 3), or the target cannot be used (exit 2)."""
    code = exit_code or EXIT_USAGE
    return (UserCodeError if code == EXIT_USER_CODE else TargetError)(message, code)


def fatal_event_error(events: list[Event], rank: int | None = None) -> TcdoctorError | None:
    """The error a child's fatal record stands for, or None when its events hold none: the one
    mapping from a fatal record to an error, for a single-process child, a rank (named by `rank`)
    and the in-process analysis alike. A rank that could not join the process group (its 'rank'
    phase, before any of the analysis's and before the user's code) is ChildFailed, exit 70 as the
    rank itself exits: tcdoctor's setup or the environment failed, not the user's code; any other
    fatal record is `fatal_error` of its message, where the user's code stood, and its exit code."""
    fatal = next((ev for ev in events if ev.fatal), None)
    if fatal is None:
        return None
    who = f"rank {rank}: " if rank is not None else ""
    if fatal.phase == "rank":
        message = f"{who}could not join the process group: {fatal.message}"
        return ChildFailed(message, EXIT_INTERNAL)
    where = where_str(fatal.where)
    return fatal_error(f"{who}{fatal.message}{where}", fatal.exit_code)
