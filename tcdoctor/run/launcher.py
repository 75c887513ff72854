"""Parent side: run the analysis in child processes with a deadline, and keep whatever finished.

The cold child measures everything that needs an empty inductor cache; a warm child compiles
afterwards against the same cache dir in a fresh process (what a restarted server pays) and
runs the profiler phases. The warm child is started together with the cold one so that its
`import torch` overlaps the cold child's; it then waits for a go signal, and the cold child
waits for the warm child's import to finish before compiling, so no measured phase overlaps
other work. A crash, hang, OOM or kill of either child still yields a report of every
finished phase.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable

from ..errors import EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE, EXIT_USER_CODE, TcdoctorError
from ..options import Options
from ..report.model import Report
from ..target.userframes import deepest_user_frame, where_str
from .assemble import assemble
from .progress import Progress
from .stream import read_events

_FH_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
POLL_S = 0.02
PROGRESS_EVERY_S = (
    0.2  # how often the parent re-reads event files for progress (only when it is shown)
)


def _last_started(events: list[dict]) -> str | None:
    open_phase = None
    for ev in events:
        if ev.get("event") == "start":
            open_phase = ev.get("phase")
        elif ev.get("event") in ("done", "failed", "skipped") and ev.get("phase") == open_phase:
            open_phase = None
    return open_phase


def _where_from_stacks(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    frames = [(m["file"], int(m["line"]), m["func"]) for m in _FH_FRAME.finditer(text)]
    return deepest_user_frame(reversed(frames))  # faulthandler prints the most recent call first


def _tail(path: str, n: int = 8) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return "".join(fh.readlines()[-n:]).strip()
    except OSError:
        return ""


class Child:
    """One analysis process: its spec, files, and how it ended."""

    def __init__(
        self,
        role: str,
        target: str,
        options: Options,
        workdir: str,
        cache_dir: str,
        deadline: float,
        tag: str | None = None,
        extra_env: dict[str, str] | None = None,
        **extra: object,
    ):
        """`extra_env`: variables set in the child's environment before it starts (a tried fix that lives
        there: tried.allocator_fixes)."""
        self.role, self.options = role, options
        self.paths = {
            k: os.path.join(workdir, f"{tag or role}.{k}")
            for k in ("events", "stacks", "log", "spec")
        }
        remaining = deadline - time.monotonic()
        spec = {
            "target": target,
            "role": role,
            "options": options.to_dict(),
            "cache_dir": cache_dir,
            "events_path": self.paths["events"],
            "stacks_path": self.paths["stacks"],
            "dump_after_s": max(0.5, remaining - 1.5) if remaining > 3 else None,
            **extra,
        }
        with open(self.paths["spec"], "w") as fh:
            json.dump(spec, fh)
        env = {
            **os.environ,
            **(extra_env or {}),
            "TORCHINDUCTOR_CACHE_DIR": cache_dir,
            "PYTHONUNBUFFERED": "1",
        }
        pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = pkg_parent + (
            os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
        )
        if (
            options.torch_trace
        ):  # --torch-trace: PyTorch's structured compile log, one folder per process (tlparse.py)
            env["TORCH_TRACE"] = os.path.join(options.torch_trace, tag or role)
        self._log = open(self.paths["log"], "w")  # noqa: SIM115 - closed in finish()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tcdoctor.run.child", self.paths["spec"]],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        self.timed_out = False

    def running(self) -> bool:
        return self.proc.poll() is None

    def kill(self, timed_out: bool) -> None:
        self.timed_out = timed_out
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def wait(
        self,
        deadline: float,
        tick: Callable[[], None] | None = None,
        every_s: float = PROGRESS_EVERY_S,
    ) -> None:
        """Block until it exits or the deadline passes (then kill it as timed out); call `tick` every `every_s`."""
        while True:
            left = deadline - time.monotonic()
            try:
                self.proc.wait(timeout=max(0.0, min(left, every_s) if tick else left))
                return
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    self.kill(timed_out=True)
                    return
                if tick:
                    tick()

    def events(self) -> list[dict]:
        return read_events(self.paths["events"])

    def finish(self) -> tuple[list[dict], dict | None]:
        """Its events, plus a failure record if it died without finishing."""
        rc = self.proc.wait()
        self._log.close()
        events = self.events()
        if any(ev.get("event") == "end" for ev in events) or any(ev.get("fatal") for ev in events):
            return events, None
        phase = _last_started(events) or "startup"
        where = _where_from_stacks(self.paths["stacks"])
        if self.timed_out:
            msg = f"timed out: the {self.options.timeout_s:g}s limit ran out during phase '{phase}'{where_str(where)}"
        elif rc < 0:
            sig = signal.Signals(-rc).name if -rc in signal.Signals._value2member_map_ else str(-rc)
            cause = " (out of memory, or killed from outside)" if -rc == signal.SIGKILL else ""
            msg = f"the analysis process was killed by {sig}{cause} during phase '{phase}'{where_str(where)}"
        else:
            msg = f"the analysis process exited with code {rc} during phase '{phase}'{where_str(where)}"
        failure: dict = {"phase": phase, "message": msg, "where": where}
        if not self.timed_out:
            failure["output_tail"] = _tail(self.paths["log"])[-2000:]
        return events, failure


def _done(events: list[dict], phase: str) -> dict | None:
    return next(
        (ev.get("data") for ev in events if ev.get("event") == "done" and ev.get("phase") == phase),
        None,
    )


def _measured(events: list[dict]) -> list[dict]:
    """A later child's events minus its bookkeeping (its own load and end records)."""
    return [ev for ev in events if ev.get("phase") != "load" and ev.get("event") != "end"]


def _touch(path: str, payload: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(payload, fh)
    os.replace(tmp, path)  # atomic: the child never reads half a file


def _show(prog: Progress, cold: Child, warm: Child | None) -> None:
    prog.feed("cold", cold.events())
    if warm:
        prog.feed("warm", warm.events())
    prog.tick()


def _stance_fix(events: list[dict], options: Options) -> list[dict]:
    """The guard-skipping stance, once the warm child measured guard cost (planned here: the cold child can't)."""
    from ..experiments.fixes import before_figures, plan_stance
    from ..report.sections import guard_share
    from ..verdict.rules import RULES

    profile, runtime = _done(events, "profile") or {}, _done(events, "runtime") or {}
    over, median = (
        profile.get("guard_overhead_s_per_call"),
        (runtime.get("compiled") or {}).get("median_s"),
    )
    if not options.fixes or over is None or not median:
        return []
    phases = ("graph_breaks", "compile", "runtime", "numerics", "recompiles")
    before = before_figures({name: _done(events, name) for name in phases})
    return plan_stance(guard_share(over, median), RULES["guard_overhead_fraction"], before)


def _fix_budget(events: list[dict], options: Options) -> float:
    if options.fix_budget_s is not None:
        return options.fix_budget_s
    first = (_done(events, "compile") or {}).get("first_call_s") or 0.0
    return max(20.0, 4 * first)


def begin(
    target: str, options: Options, keep_dir: str | None, progress: bool, prefix: str
) -> tuple[Progress, str, float]:
    """What every analysis does first: check the target (one-line errors before any child starts),
    then its progress printer, its work folder and its deadline."""
    from ..target.load import precheck

    precheck(target)
    workdir = keep_dir or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(workdir, exist_ok=True)
    return Progress(enabled=progress), workdir, time.monotonic() + options.timeout_s


def analyze_target(
    target: str, options: Options, keep_dir: str | None = None, progress: bool = False
) -> tuple[Report, int]:
    """Run the children and assemble the report; `progress` writes each phase to stderr as it finishes."""
    prog, workdir, deadline = begin(target, options, keep_dir, progress, "tcdoctor-")
    cache_dir = os.path.join(workdir, "inductor-cache")
    ready, go = os.path.join(workdir, "warm.ready"), os.path.join(workdir, "warm.go")
    try:
        warm = (
            Child(
                "warm", target, options, workdir, cache_dir, deadline, ready_path=ready, go_path=go
            )
            if options.warm
            else None
        )
        cold = Child(
            "cold", target, options, workdir, cache_dir, deadline, wait_for=ready if warm else None
        )
        go_sent = False
        next_progress = 0.0
        while cold.running() or (warm and warm.running()):
            if prog.enabled and time.monotonic() >= next_progress:
                _show(prog, cold, warm)
                next_progress = time.monotonic() + PROGRESS_EVERY_S
            if time.monotonic() > deadline:
                for c in (cold, warm):
                    if c and c.running():
                        c.kill(timed_out=True)
                break
            if warm and not warm.running() and not os.path.exists(ready):
                _touch(ready, {"warm_died": True})  # never leave the cold child waiting
            if warm and not go_sent and not cold.running():
                cold_events = cold.events()
                runtime = _done(cold_events, "runtime") or {}
                run = _done(cold_events, "compile") is not None
                _touch(
                    go, {"run": run, "per_call_s": (runtime.get("compiled") or {}).get("median_s")}
                )
                go_sent = True
            time.sleep(POLL_S)

        events, failure = cold.finish()
        prog.feed("cold", events)
        fatal = next((ev for ev in events if ev.get("fatal")), None)
        if fatal:
            err = fatal["error"]
            raise TcdoctorError(
                f"{err['message']}{where_str(err.get('where'))}",
                fatal.get("exit_code") or EXIT_USAGE,
            )
        if failure and failure["phase"] in ("startup", "load"):
            raise TcdoctorError(
                failure["message"], EXIT_USAGE if failure["phase"] == "startup" else EXIT_USER_CODE
            )
        failures = [failure] if failure else []
        if warm:
            warm_events, warm_failure = warm.finish()
            prog.feed("warm", warm_events)
            if go_sent and warm_failure:
                failures.append(warm_failure)
            events += _measured(warm_events)
        plan = (_done(events, "plan") or {}).get("strategies", []) + _stance_fix(events, options)
        fix_budget, fix_spent, not_tried = _fix_budget(events, options), 0.0, []
        for i, spec in enumerate(plan):
            if time.monotonic() > deadline - 1:
                failures.append(
                    {
                        "phase": "strategies",
                        "message": f"{len(plan) - i} strategy comparison(s) not run: the {options.timeout_s:g}s limit was used up",
                    }
                )
                break
            tried_kind = spec["kind"] in ("fix", "ablation")
            if tried_kind and fix_spent >= fix_budget:
                not_tried.append(
                    {
                        "spec": spec,
                        "why": f"the fix budget ({fix_budget:.0f} s, --fix-budget) was used up",
                    }
                )
                continue
            started = time.monotonic()
            prog.strategy(f"strategy-{i}", i + 1, len(plan), spec)
            child = Child(
                "strategy",
                target,
                options,
                workdir,
                os.path.join(workdir, f"cache-strategy-{i}"),
                deadline,
                tag=f"strategy-{i}",
                extra_env=(spec.get("fix") or {}).get("env"),
                strategy=spec,
            )
            child.wait(deadline, tick=prog.tick if prog.enabled else None)
            s_events, s_failure = child.finish()
            prog.feed(f"strategy-{i}", s_events)
            events += _measured(s_events)
            if s_failure:
                failures.append(s_failure)
            if tried_kind:
                fix_spent += time.monotonic() - started
        if not_tried:
            events.append(
                {"event": "done", "phase": "fixes_not_tried", "data": {"not_tried": not_tried}}
            )
        report = assemble(target, options.to_dict(), events, failures)
    finally:
        prog.close()
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return report, (EXIT_INCOMPLETE if report.errors else EXIT_OK)
