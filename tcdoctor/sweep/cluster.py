"""The Ray cluster a `tcdoctor sweep --ray` runs on: attached to, or started for the sweep.

Method. `--ray auto` (RAY_ADDRESS, or the cluster `ray start` left on this machine), `--ray
HOST:PORT` and `--ray ray://HOST:PORT` attach with `ray.init(address=...)`. `--ray` alone starts a
local cluster: `ray start --head --block` bound to 127.0.0.1 on a free port, with all of this
machine's CPUs (and the GPUs Ray detects), its temp folder a fresh one under the system's temp
folder, and Ray's token authentication on with a fresh token kept in that folder (never in
~/.ray); the `ray start` process dies with the driver (PR_SET_PDEATHSIG)
and takes the cluster's processes with it, and is stopped (SIGTERM, then SIGKILL) when the sweep
ends. Its workers run at the driver's niceness (`RAY_worker_niceness`; Ray's default is 15). `fits` checks, before any task is submitted, that some live node has the CPUs and GPUs one
target asks for: Ray would otherwise keep an infeasible task waiting for ever.

Pitfalls. Ray 2.60's GCS and raylet listen on every interface (`::`) whatever the node's address,
and the node registers under the machine's own address (Ray resolves 127.0.0.1 to it), so the
token is what keeps the local cluster to this sweep; `--node-ip-address 127.0.0.1` makes the
driver's own `127.0.0.1:PORT` reachable. An
autoscaling cluster may add a GPU node later; `fits` judges the nodes alive now. ray is imported
only here and in sweep/node.py's task, never without --ray.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

from ..errors import UsageError

START_TIMEOUT_S = 120.0  # a loaded 2-core machine started a head in 3-8 s
STOP_TIMEOUT_S = 20.0
LOCAL = "local"


def import_ray() -> Any:
    """ray, or one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UsageError("--ray needs ray: pip install 'tcdoctor[ray]'") from None
    return ray


def niceness() -> int:
    """This process's niceness (what a Ray task's analysis is brought back to: sweep/node.py)."""
    return os.getpriority(os.PRIO_PROCESS, 0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """The child is sent SIGKILL when the process that started it dies (Linux's prctl)."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Cluster:
    """`with Cluster(address) as c:` ray attached (`c.address`, `c.started_s` for a local one);
    on leaving, ray shut down and a local cluster stopped."""

    def __init__(self, address: str, quiet: bool = True) -> None:
        self.address = address
        self.quiet = quiet
        self.started_s: float | None = None
        self._head: subprocess.Popen | None = None
        self._temp: str | None = None

    def __enter__(self) -> Cluster:
        if self.address == LOCAL:
            self._token()  # before ray is imported: its configuration reads the mode once
        ray = import_ray()
        try:
            if self.address == LOCAL:
                self._start_local()
            ray.init(
                address=self.address, logging_level="ERROR", log_to_driver=False,
                configure_logging=False,
            )  # fmt: skip
        except UsageError:
            self.__exit__(None, None, None)
            raise
        except Exception as exc:  # noqa: BLE001 - ray's many connection errors: one line
            self.__exit__(None, None, None)
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UsageError(
                f"cannot attach to the Ray cluster at {self.address}: {first}"
            ) from None
        return self

    def _token(self) -> None:
        """The local cluster's folder and its token, in this process's environment."""
        self._temp = tempfile.mkdtemp(prefix="tcd-ray-")  # short: Ray's socket paths must fit
        token = os.path.join(self._temp, "auth_token")
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
        # this driver's ray.init and the head's processes (the workers inherit it) read it there
        os.environ.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": token})

    def _start_local(self) -> None:
        began = time.monotonic()
        assert self._temp is not None
        port = _free_port()
        log = open(os.path.join(self._temp, "head.log"), "wb")  # noqa: SIM115 - the head's lifetime
        self._head = subprocess.Popen(
            [
                sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
                "--node-ip-address", "127.0.0.1", "--port", str(port),
                "--num-cpus", str(len(os.sched_getaffinity(0))), "--include-dashboard=false",
                "--temp-dir", self._temp, "--disable-usage-stats",
            ],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent, env={**os.environ, "RAY_worker_niceness": str(niceness())},
        )  # fmt: skip
        log.close()
        self.address = f"127.0.0.1:{port}"
        deadline = began + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._head.poll() is not None:
                raise UsageError(f"the local Ray cluster did not start: {self._log_tail()}")
            if b"Ray runtime started" in self._log_bytes():
                self.started_s = time.monotonic() - began
                return
            time.sleep(0.1)
        raise UsageError(f"the local Ray cluster did not start in {START_TIMEOUT_S:g} s")

    def _log_bytes(self) -> bytes:
        try:
            with open(os.path.join(self._temp or "", "head.log"), "rb") as fh:
                return fh.read()
        except OSError:
            return b""

    def _log_tail(self) -> str:
        lines = self._log_bytes().decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    def __exit__(self, *exc: object) -> None:
        if "ray" in sys.modules:
            sys.modules["ray"].shutdown()
        head, self._head = self._head, None
        if head is not None and head.poll() is None:
            head.send_signal(signal.SIGTERM)
            try:
                head.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                head.kill()
                head.wait()
        if self._temp:
            shutil.rmtree(self._temp, ignore_errors=True)


def node_resources() -> list[tuple[str, float, float]]:
    """(address, CPUs, GPUs) of every live node."""
    ray = import_ray()
    return [
        (
            n.get("NodeManagerAddress", "?"),
            n["Resources"].get("CPU", 0),
            n["Resources"].get("GPU", 0),
        )
        for n in ray.nodes()
        if n.get("Alive")
    ]


def fits(cpus: int, gpus: int) -> None:
    """A UsageError (one line) when no live node has `cpus` CPUs and `gpus` GPUs: a task asking
    for them would wait for ever."""
    nodes = node_resources()
    if any(c >= cpus and g >= gpus for _, c, g in nodes):
        return
    have = "; ".join(f"{a}: {c:g} CPU, {g:g} GPU" for a, c, g in nodes) or "no live node"
    raise UsageError(
        f"no node of the Ray cluster has {cpus} CPU(s) and {gpus} GPU(s) for one target "
        f"({have}): lower --ray-cpus/--ray-gpus, or add such a node"
    )
