"""The serving replay for the AOT tests, until probes/traffic_replay.py (the `serving` helper's) is
on this branch: `install()` puts a stand-in module in its place only when the real one does not
import. The stand-in keeps the contract's signature, `replay(fn, requests, call, sync, *,
deadline)`, and serves each request as the real one does (synced before and after, perf_counter
around `call(fn, request.args)`, a request that raises kept as an error). Tests only."""

from __future__ import annotations

import dataclasses
import sys
import time
import types
from typing import Any


@dataclasses.dataclass(frozen=True)
class Request:
    index: int
    args: Any
    shapes: str


@dataclasses.dataclass
class ReplayResult:
    latencies_s: list = dataclasses.field(default_factory=list)
    errors: list = dataclasses.field(default_factory=list)
    stopped: str | None = None


def replay(fn, requests, call, sync, *, deadline, **_ignored):
    out = ReplayResult()
    for request in requests:
        if time.monotonic() > deadline:
            out.stopped = f"the part's time ran out after {len(out.latencies_s)} requests"
            break
        sync()
        t0 = time.perf_counter()
        try:
            call(fn, request.args)
            sync()
            out.latencies_s.append(time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001
            out.latencies_s.append(None)
            out.errors.append({"request": request.index, "message": f"{type(exc).__name__}: {exc}"})
    return out


def install() -> str:
    """'real' when the serving helper's replay imports, else 'stand-in' (installed)."""
    try:
        import tcdoctor.probes.traffic_replay  # noqa: F401

        return "real"
    except ImportError:
        mod = types.ModuleType("tcdoctor.probes.traffic_replay")
        mod.replay = replay
        mod.ReplayResult = ReplayResult
        sys.modules["tcdoctor.probes.traffic_replay"] = mod
        return "stand-in"


def requests_of(calls: list) -> list:
    """Traffic Requests (target/traffic.py's where it exists) of a list of CallArgs."""
    try:
        from tcdoctor.target.traffic import Request as Real
        from tcdoctor.target.traffic import describe

        return [Real(i, ca, describe(ca)) for i, ca in enumerate(calls)]
    except ImportError:
        return [
            Request(i, ca, str([tuple(a.shape) for a in ca.args])) for i, ca in enumerate(calls)
        ]
