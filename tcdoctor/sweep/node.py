"""One target of `tcdoctor sweep --ray`, on the Ray worker that was given it.

Method. `run_target(spec)` is the Ray task's body (sweep/remote.py makes it a remote function
with the CPUs and GPUs the target holds). It starts a fresh Python process, `python -m
tcdoctor.sweep.node SPEC`, which runs the local sweep's own `_run_one` (the pipeline `analyze`
runs, its child processes, its own `--timeout`) into a work folder of its own, and writes the row.
The task then reads back every file the analysis wrote (the JSON, HTML and Markdown reports, the
warm-up script) as bytes and returns them with the row, where it ran (`Placement`: host, IP,
Ray's node id, the GPUs Ray gave it, its pid) and what it ran with (`Versions`), so the driver
needs no file system shared with the workers.

The target's file is looked for under the driver's folder first (one machine, a shared file
system, a Slurm allocation), then under the worker's own folder (a Ray job's `--working-dir`,
which Ray unpacks on every node); a target found in neither is a failed row that names the node.

Pitfalls. A Ray worker is killed without warning (its node lost, a `kill -9`): the analysis
process watches its parent and, when the worker is gone, stops the child processes it started
(each in its own session: one killpg each, by pid) and exits, so a retried task never races an
orphan of the first try. The analysis's `--threads` is the task's CPUs (the driver sets it), and
Ray places at most a node's CPUs' worth of tasks on it; Ray does not pin cores, so two analyses
on one node hold disjoint core counts, not disjoint cores. Nothing here imports ray at module
level: the driver pickles `run_target` by reference, and the worker imports ray itself.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from typing import Any

ROW_NAME = "node-row.json"  # the row the analysis process writes for its task
PARENT_POLL_S = 0.5
LOG_TAIL = 2000  # characters of the analysis process's stderr a failed task's row quotes


def _metadata_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def cuda_version() -> str | None:
    """The CUDA the installed torch was built with (`torch.version.cuda`), read from its
    version.py without importing torch (seconds, and a CUDA context the task does not need)."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "version.py")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return None
    found = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return found.group(1) if found else None


def versions() -> dict[str, str | None]:
    """This process's Python, tcdoctor, torch and torch's CUDA (report/sweep.py `Versions`)."""
    from ..version import __version__

    return {
        "python": platform.python_version(),
        "tcdoctor": __version__,
        "torch": _metadata_version("torch"),
        "cuda": cuda_version(),
    }


def _placement(cpus: float, nice: int) -> dict[str, Any]:
    """Where this task runs, as Ray sees it, and the niceness its analysis runs at (report/sweep.py
    `Placement`)."""
    import ray

    ctx = ray.get_runtime_context()
    return {
        "node": socket.gethostname(),
        "node_ip": ray.util.get_node_ip_address(),
        "node_id": ctx.get_node_id(),
        "gpus": [str(g) for g in ray.get_gpu_ids()],
        "cpus": cpus,
        "pid": os.getpid(),
        "nice": nice,
    }


THREADS_UNSET = "unset"  # the driver had no OMP_NUM_THREADS


def driver_threads(env: Mapping[str, str], omp: str) -> dict[str, str]:
    """The worker's environment with the driver's OMP_NUM_THREADS (or none, as the driver had):
    Ray sets it to the task's CPUs in every worker, a local sweep's analysis does not have it, and
    the analysis sets its own thread count (--threads = the task's CPUs) where it times. A figure
    must be what the same analysis gives on one machine."""
    out = dict(env)
    if omp == THREADS_UNSET:
        out.pop("OMP_NUM_THREADS", None)
    else:
        out["OMP_NUM_THREADS"] = omp
    return out


def run_at(nice: int) -> int:
    """Bring this worker, and so the analysis it starts, to the driver's niceness; the niceness it
    then has. Ray runs its workers at niceness 15 (`RAY_worker_niceness`) so that its own processes
    come first: an analysis timed there is preempted by any busy process at niceness 0 on the node,
    where on one machine it would share the cores evenly. Lowering a niceness needs CAP_SYS_NICE
    (root) or RLIMIT_NICE: where it is refused the analysis runs where it is, and the overview says
    so (report/sweep.py `Sweep.niceness_notes`)."""
    if os.getpriority(os.PRIO_PROCESS, 0) > nice:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        except OSError:
            pass
    return os.getpriority(os.PRIO_PROCESS, 0)


def plain_signals() -> None:
    """Give this process, and so every process the analysis starts, a plain process's signal state.
    A Ray worker blocks SIGINT and ignores SIGINT and SIGQUIT (its /proc status: SigBlk 0x2, SigIgn
    0x6 above a shell's), and a blocked mask and ignored signals pass through exec to every child,
    so the user's model would run where Ctrl-C or a handler it installs never fires. Python sets
    SIGPIPE and SIGXFSZ itself and subprocess restores them in children, so those stay as they are."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _folder_of(target: str, driver_cwd: str) -> str | None:
    """The folder the target's relative path is found under: the driver's, else this worker's."""
    path = target.rpartition(":")[0]
    if os.path.isabs(path):
        return driver_cwd if os.path.isfile(path) else None
    for base in (driver_cwd, os.getcwd()):
        if os.path.isdir(base) and os.path.isfile(os.path.join(base, path)):
            return base
    return None


def _failed(spec: dict, reason: str, started: float) -> dict:
    from ..errors import EXIT_USAGE
    from ..report.sweep import failed_row

    row = failed_row(spec["target"], EXIT_USAGE, reason, time.monotonic() - started)
    return row.to_dict()


def run_target(spec: dict) -> dict:
    """The Ray task: analyse `spec["target"]` in a fresh process and return its row, its files
    (name -> bytes), where it ran and the versions it ran with."""
    started = time.monotonic()
    placed = _placement(spec["cpus"], run_at(spec.get("nice", 0)))
    result: dict[str, Any] = {"placement": placed, "versions": versions(), "files": {}}
    base = _folder_of(spec["target"], spec["cwd"])
    if base is None:
        where = f"{placed['node']} ({placed['node_ip']})"
        result["row"] = _failed(
            spec,
            f"the target's file is not on node {where}: neither under {spec['cwd']} nor under "
            f"the worker's folder {os.getcwd()} (docs/cluster.md: ship the models)",
            started,
        )
        return result
    work = tempfile.mkdtemp(prefix="tcdoctor-ray-")
    try:
        spec_path = os.path.join(work, "spec.json")
        with open(spec_path, "w", encoding="utf-8") as fh:
            json.dump({**spec, "out": work, "placement": placed}, fh)
        log_path = os.path.join(work, "analysis.log")
        with open(log_path, "wb") as log:
            proc = subprocess.run(
                [sys.executable, "-m", "tcdoctor.sweep.node", spec_path],
                cwd=base,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
                env=driver_threads(os.environ, spec.get("omp_num_threads", THREADS_UNSET)),
            )
        folder = os.path.join(work, spec["folder"])
        try:
            with open(os.path.join(folder, ROW_NAME), encoding="utf-8") as fh:
                result["row"] = json.load(fh)
        except (OSError, ValueError):
            with open(log_path, encoding="utf-8", errors="replace") as fh:
                tail = fh.read()[-LOG_TAIL:].strip().splitlines()
            last = tail[-1] if tail else "no output"
            result["row"] = _failed(
                spec, f"the analysis process ended (code {proc.returncode}): {last}", started
            )
            return result
        result["files"] = _files(folder)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _files(folder: str) -> dict[str, bytes]:
    """Every file the analysis wrote in its folder (not the row, which is returned as data)."""
    out = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name != ROW_NAME and os.path.isfile(path):
            with open(path, "rb") as fh:
                out[name] = fh.read()
    return out


# ---------------------------------------------------------------------------- the analysis process


def _stop_children() -> None:
    """Kill every process this one started: each child is a session leader (run/process.py), so
    one killpg per child stops it and all it started."""
    import psutil

    for child in psutil.Process().children():
        for kill in (lambda pid: os.killpg(pid, signal.SIGKILL), lambda pid: os.kill(pid, 9)):
            try:
                kill(child.pid)
            except OSError:
                continue


def _watch_parent() -> None:
    """When the Ray worker that started this process is gone, stop the analysis and exit."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        _stop_children()
        os._exit(137)

    threading.Thread(target=watch, name="tcdoctor-parent-watch", daemon=True).start()


def main(spec_path: str) -> int:
    """The fresh analysis process: the local sweep's `_run_one` into the work folder, with the
    node recorded in the report's environment (`ray`), and the row written for the task."""
    from ..options import Options
    from ..render.write import write_text
    from ..report.encoding import dumps
    from . import _run_one

    plain_signals()
    _watch_parent()
    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    options = Options.from_dict(spec["options"])
    named_in = os.path.join(spec["driver_out"], spec["folder"])
    row = _run_one(
        spec["target"], spec["folder"], spec["out"], options, spec["expected_calls"],
        named_in=named_in, environment={"ray": spec["placement"]},
    )  # fmt: skip
    folder = os.path.join(spec["out"], spec["folder"])
    os.makedirs(folder, exist_ok=True)
    write_text(os.path.join(folder, ROW_NAME), dumps(row.to_dict(), indent=2), "the node's row")
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a process by run_target
    sys.exit(main(sys.argv[1]))
