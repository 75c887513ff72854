"""The `host` part: host against device time, `skip_guard_eval_unsafe`, and THREADS threads in
one process (probes/serve_threads.py: the method and its pitfalls), in one fresh process started
from an empty cache folder seeded with the machine's probed ISA checks (its warm-up's time is the
warm-up's cold figure).

Torch-free at import: the parent imports it; `part_host` runs in the part's own process.
"""

from __future__ import annotations

from typing import Any

from ...report.events import Event
from ..spec import ServeSpec
from ..stages import Where
from .part import Part, Serving
from .replay import derived, warmup_requests
from .section import HostPart, typed


def _plan(run: Serving) -> None:
    data = run.go(PART, run.share(PART), warmup=warmup_requests(run))
    run.results["host"] = typed(data, HostPart)


def part_host(serve: Any, indices: list[int]) -> None:
    """The `host` part (probes/serve_threads.py's docstring: the method)."""
    import time

    from ...probes import dynamo_state, warmup
    from ...probes.serve_threads import (
        THREADS,
        host_row,
        keeper,
        run_threads,
        skip_guards_row,
    )

    cuda = serve.device.type == "cuda"
    eager = serve.fresh().model
    serve.call(
        eager, serve.workload.call_args
    )  # the runtime's lazy start, untimed, as in the replay
    dynamo_state.fresh()
    compiled = serve.compile(serve.fresh().model)
    n = len(warmup.user_warmup(serve)) + len(indices)
    label = f"serving: warm-up ({n} requests, an empty cache)"
    serve.sink(Event(event="start", phase=label))
    seconds, _ = warmup.serve_warmup(serve, compiled, indices)
    serve.sink(Event(event="done", phase=label, seconds=seconds))
    serve.put("warmup_s", seconds)
    e = serve.replay(eager, "serving: host time (eager)")
    guarded: dict = {}
    c = serve.replay(compiled, "serving: host time (compiled)", keep=keeper(guarded))
    host = {
        "eager": host_row(e, cuda),
        "compiled": host_row(c, cuda),
        "skip_guards": skip_guards_row(serve, compiled, guarded, cuda) if n else None,
        "method": "after the warm-up, the traffic replayed eager then compiled in one fresh "
        "process; host time per request (CUDA: until the call returned; CPU: the latency, the host "
        "runs the kernels), max requests/s = 1 / median host time",
    }
    serve.put("compiled_replay", {"latencies_s": c.latencies_s, "compiles": len(c.compiles)})
    serve.put("host", host)
    label = f"serving: {THREADS} threads in one process"
    serve.sink(Event(event="start", phase=label))
    t0 = time.perf_counter()
    serve.put("threads", run_threads(serve, eager, compiled))
    serve.sink(Event(event="done", phase=label, seconds=time.perf_counter() - t0))


def _serve(ctx: Any, spec: ServeSpec, spawn: dict) -> None:
    part_host(ctx, spec.warmup or [])


PART = Part(
    "host",
    Where.CHILDREN,
    _plan,
    needs=("replay",),
    when=derived,
    weight=2.0,
    serves={"host": _serve},
)
