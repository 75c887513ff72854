"""Parent side: run the analysis in child processes with a deadline, and keep whatever finished.

The cold child measures everything that needs an empty inductor cache; a second, fresh child
then compiles against the same cache dir (the warm case) and does the profiler-based phases.
A crash, hang, OOM or kill of either child still yields a report of every finished phase.
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

from ..errors import EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE, TcdoctorError
from ..report import Report, assemble
from ..userframes import deepest_user_frame, where_str
from .options import Options
from .stream import read_events

_FH_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


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
        text = open(path, encoding="utf-8", errors="replace").read()
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


def run_child(target: str, options: Options, role: str, workdir: str, cache_dir: str, deadline: float, per_call_s: float | None = None) -> tuple[list[dict], dict | None]:
    """Run one child to completion or deadline; returns its events and a failure record if it died."""
    tag = f"{role}"
    paths = {k: os.path.join(workdir, f"{tag}.{k}") for k in ("events", "stacks", "log", "spec")}
    remaining = deadline - time.monotonic()
    if remaining <= 1:
        return [], {"phase": role, "message": f"not started: the {options.timeout_s:g}s time limit was used up"}
    spec = {
        "target": target, "role": role, "options": options.to_dict(), "cache_dir": cache_dir,
        "events_path": paths["events"], "stacks_path": paths["stacks"], "per_call_s": per_call_s,
        "dump_after_s": max(0.5, remaining - 1.5) if remaining > 3 else None,
    }
    with open(paths["spec"], "w") as fh:
        json.dump(spec, fh)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="")
    pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with open(paths["log"], "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tcdoctor.run.child", paths["spec"]],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        timed_out = False
        try:
            rc = proc.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            rc = proc.wait()
    events = read_events(paths["events"])
    if any(ev.get("event") == "end" for ev in events) or any(ev.get("fatal") for ev in events):
        return events, None
    phase = _last_started(events) or "startup"
    where = _where_from_stacks(paths["stacks"])
    if timed_out:
        msg = f"timed out: the {options.timeout_s:g}s limit ran out during phase '{phase}'{where_str(where)}"
    elif rc < 0:
        sig = signal.Signals(-rc).name if -rc in signal.Signals._value2member_map_ else str(-rc)
        cause = " (out of memory, or killed from outside)" if -rc == signal.SIGKILL else ""
        msg = f"the analysis process was killed by {sig}{cause} during phase '{phase}'{where_str(where)}"
    else:
        msg = f"the analysis process exited with code {rc} during phase '{phase}'{where_str(where)}"
    failure = {"phase": phase, "message": msg, "where": where}
    if not timed_out:
        failure["output_tail"] = _tail(paths["log"])[-2000:]
    return events, failure


def analyze_target(target: str, options: Options, keep_dir: str | None = None) -> tuple[Report, int]:
    from ..target import precheck

    precheck(target)
    workdir = keep_dir or tempfile.mkdtemp(prefix="tcdoctor-")
    os.makedirs(workdir, exist_ok=True)
    cache_dir = os.path.join(workdir, "inductor-cache")
    deadline = time.monotonic() + options.timeout_s
    try:
        events, failure = run_child(target, options, "cold", workdir, cache_dir, deadline)
        fatal = next((ev for ev in events if ev.get("fatal")), None)
        if fatal:
            err = fatal["error"]
            raise TcdoctorError(f"{err['message']}{where_str(err.get('where'))}", fatal.get("exit_code") or EXIT_USAGE)
        if failure and failure["phase"] in ("startup", "load"):
            raise TcdoctorError(failure["message"], EXIT_USAGE if failure["phase"] == "startup" else 3)
        failures = [failure] if failure else []
        compiled_ok = any(ev.get("event") == "done" and ev.get("phase") == "compile" for ev in events)
        if options.warm and compiled_ok:
            per_call = next((ev["data"]["compiled"]["median_s"] for ev in events if ev.get("event") == "done" and ev.get("phase") == "runtime"), None)
            warm_events, warm_failure = run_child(target, options, "warm", workdir, cache_dir, deadline, per_call)
            events += [ev for ev in warm_events if ev.get("phase") not in ("load",) and ev.get("event") != "end"]
            if warm_failure:
                failures.append(warm_failure)
        report = assemble(target, options.to_dict(), events, failures)
    finally:
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return report, (EXIT_INCOMPLETE if report["errors"] else EXIT_OK)
