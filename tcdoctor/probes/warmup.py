"""A warm-up proven to cover the traffic: derived from the compiles the traffic triggered, then
proven in a fresh process under `torch.compiler.set_stance("fail_on_recompile")`.

Derivation (`derive`, in the replay process): the requests of the compiled side that PyTorch
compiled for (CompilationMetrics entries, kinds "compile" and "recompile"), in traffic order, one
request per compile it triggered (several frames of one request, after a graph break, keep one
request): each is the request whose guards failed (its `signature`: the guard failures in
PyTorch's words). Replayed in the same order in a fresh process, those requests make Dynamo take
the same decisions (the same automatic-dynamic marks, the same 0/1 specialisations), because
Dynamo's decisions depend on the shapes it has compiled for, and the requests between them
compiled nothing. A compile that hit `recompile_limit` compiled nothing (the eager fallback): it is
not in the set, and the proof then fails on its request, as it must: no warm-up covers a traffic
past the limit.

Proof (run/serving/proof.py, in a fresh process started from a copy of the replay's cache): the warm-up
requests are served (timed: `seconds_warm`, the warm-up with a warm cache; the host part measures
it from an empty cache: `seconds_cold`), then `set_stance("fail_on_recompile")`, then the whole
traffic is replayed. A request that would compile raises PyTorch's "Detected recompile when
torch.compile stance is 'fail_on_recompile'" with the guard failures; the request is named with
them. Proven when the replay served every request and none would have compiled. Under the stance
a new frame's first compile raises too (not only a recompile), so a frame first reached by some
request (a branch, a break) is caught as well.

The start-up script (`script`): a short Python file that loads the target's build(), compiles the
model as the analysis did and serves the warm-up requests: for a shape distribution, `make` with
each request's drawn dimensions; for a list, the requests by index; otherwise tcdoctor's own
`requests()` regenerates them. The report keeps its text.

Pitfalls: the stance is process-wide and is set back to "default" after the proof. A request the
model rejects (eager raises on it too) also reaches Dynamo, whose guards fail and which would
trace it: under the stance it raises "Detected recompile" instead of the model's error; it is
checked on eager, off the clock, and kept apart as an error (no warm-up can serve it). A model that
changes state per call (a cache it grows) can compile for a reason no shape explains: the proof
names that request.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..report.events import Event
from . import restart
from .traffic_replay import ReplayResult, ServeContext

PROOF_METHOD = (
    "a fresh process (a copy of the replay's cache folder) served the warm-up requests, then "
    "torch.compiler.set_stance('fail_on_recompile'), then replayed the traffic: proven when every "
    "request was served and none would have compiled (PyTorch raises 'Detected recompile' with "
    "the failed guards for a request that would)"
)


def derive(compiled: ReplayResult, serve: ServeContext | None = None) -> dict:
    """The warm-up set from the compiled side's compiles: {requests, signatures, script, method}."""
    rejected = {e["request"] for e in compiled.errors}
    order: dict[int, list[dict]] = {}
    for c in compiled.made:  # a compile that failed (the request was rejected) made nothing
        if c["request"] not in rejected:
            order.setdefault(c["request"], []).append(c)
    signatures = [
        {
            "request": i,
            "shapes": events[0]["shapes"],
            "compiles": [
                {k: e.get(k) for k in ("compile_id", "function", "kind", "reason")} for e in events
            ],
        }
        for i, events in order.items()
    ]
    out = {
        "requests": list(order),
        "signatures": signatures,
        "method": "one request per compile the traffic triggered (the request whose guards "
        "failed), in traffic order; a compile at recompile_limit, or of a request the model "
        "rejected, compiled nothing and is not in it",
    }
    if serve is not None:
        out["script"] = script(serve, list(order))
    return out


def _dims_of(serve: ServeContext, indices: list[int]) -> dict[int, dict | None]:
    """The drawn dimensions of the requests `indices` (a distribution's), regenerated."""
    want, found = set(indices), {}
    if not want:
        return found
    for r in serve.requests():
        if r.index in want:
            found[r.index] = dict(r.dims) if r.dims is not None else None
        if r.index >= max(want):
            break
    return found


def script(serve: ServeContext, indices: list[int]) -> str:
    """The start-up warm-up script's text (see the module's docstring)."""
    from ..target.load import split_target

    target = serve.target or "TARGET.py:build"
    path, func = split_target(target)
    path = os.path.abspath(path)
    plain = {k: v for k, v in serve.compile_kwargs().items() if not repr(v).startswith("<")}
    kwargs = ", ".join(f"{k}={v!r}" for k, v in plain.items())
    other = sorted(set(serve.compile_kwargs()) - set(plain))
    yours = serve.traffic.warmup is not None
    head = (
        [
            f'"""Warm-up for {target}: your Traffic(warmup=...) ({len(serve.traffic.warmup)} '
            "request(s)), then",
            f"the {len(indices)} request(s) of the traffic tcdoctor replayed ({serve.n} requests) "
            "that still compiled after it.",
        ]
        if yours
        else [
            f'"""Warm-up for {target}: {len(indices)} request(s) that trigger every compile of the',
            f"traffic tcdoctor replayed ({serve.n} requests).",
        ]
    )
    lines = [
        *head,
        "Run it at start-up, before serving.",
        '"""',
        "import importlib.util",
        "",
        "import torch",
        "",
        f'spec = importlib.util.spec_from_file_location("target", {path!r})',
        "module = importlib.util.module_from_spec(spec)",
        "spec.loader.exec_module(module)",
        f"workload = module.{func}()",
        f"model = torch.compile(workload.model{', ' + kwargs if kwargs else ''})",
    ]
    if other:  # an object (a backend function) has no source form: the user passes their own
        lines.insert(-1, f"# also pass your {', '.join(other)} as your server does")
    lines += _request_lines(serve, indices)
    lines += [
        "",
        "",
        "def serve(request):  # one request, as tcdoctor called the model",
        "    if hasattr(request, 'apply'):  # a tcdoctor CallArgs",
        "        return request.apply(model)",
        "    if isinstance(request, dict):",
        "        return model(*workload.inputs, **request)",
        "    if isinstance(request, (tuple, list)):",
        "        return model(*request, **workload.kwargs)",
        "    return model(request, **workload.kwargs)",
        "",
        "",
    ]
    if serve.workload.grad:
        lines += ["for request in requests:", "    serve(request)"]
    else:
        lines += ["with torch.no_grad():", "    for request in requests:", "        serve(request)"]
    lines += [
        'torch.compiler.set_stance("fail_on_recompile")  # optional: a compile while serving raises',
        "",
    ]
    return "\n".join(lines)


def _request_lines(serve: ServeContext, indices: list[int]) -> list[str]:
    """The script's lines that make its warm-up requests: the traffic's `indices` (a
    distribution's drawn dimensions through `make`, a list's by index, else regenerated), after
    the user's own warm-up where the Traffic gives one."""
    kind, lines = serve.traffic.kind, []
    if kind == "distribution":
        dims = _dims_of(serve, indices)
        lines.append(f"WARMUP = {[dims.get(i) for i in indices]!r}")
        lines.append("requests = [workload.traffic.make(**dims) for dims in WARMUP]")
    elif kind == "list":
        lines.append(f"WARMUP = {indices!r}  # indices into the Traffic's list")
        lines.append("src = workload.traffic.source")
        lines.append("requests = [src[i % len(src)] for i in WARMUP]")
    else:
        lines.append(f"WARMUP = {indices!r}  # indices into the traffic")
        lines.append("from tcdoctor.target.traffic import from_workload, requests as all_requests")
        lines.append("traffic = workload.traffic or from_workload(workload)")
        lines.append("n = max(WARMUP, default=-1) + 1")
        lines.append(
            "requests = [r.args for r in all_requests(traffic, workload, n) if r.index in WARMUP]"
        )
    if serve.traffic.warmup is not None:  # the user's own warm-up first, as the replay served it
        first = (
            "[workload.traffic.make(**dims) for dims in workload.traffic.warmup]"
            if kind == "distribution"
            else "list(workload.traffic.warmup)"
        )
        lines.append(f"requests = {first} + requests  # your Traffic(warmup=...) first")
    return lines


def user_warmup(serve: ServeContext) -> list:
    """The user's own warm-up requests (`Traffic(warmup=...)`), empty without one."""
    from ..target.traffic import warmup_requests

    return warmup_requests(serve.traffic, serve.workload)


def run_user_warmup(serve: ServeContext, fn: Any, label: str) -> ReplayResult | None:
    """The user's own warm-up served on `fn` as the server's start-up, each request synced and
    timed by the one replay (its compiles are the start-up's, not the traffic's); None without
    one. A warm-up request the model rejects is an error of the result, named by its place in
    the warm-up."""
    from .traffic_replay import replay

    reqs = user_warmup(serve)
    if not reqs:
        return None
    serve.sink(Event(event="start", phase=label))
    t0 = time.perf_counter()
    result = replay(
        fn,
        reqs,
        serve.call,
        serve.sync,
        deadline=serve.deadline,
        device=serve.device,
        compile_kwargs=serve.compile_kwargs(),
    )
    serve.sink(Event(event="done", phase=label, seconds=time.perf_counter() - t0))
    return result


def startup_record(result: ReplayResult) -> dict:
    """The user's warm-up as the replay served it: its requests, their seconds, its compiles."""
    return {
        "requests": len(result.latencies_s),
        "shapes": list(result.shapes),
        "latencies_s": list(result.latencies_s),
        "seconds": sum(result.served),
        "compiles": list(result.compiles),
        "compile_s": result.compile_s,
        "errors": list(result.errors),
        "limit_hit": result.limit_hit,
        "method": "the user's Traffic(warmup=...) served first in the replay process, on the "
        "compiled model before the traffic, each request synced and timed as the traffic's are; "
        "its compiles are the server's start-up cost, not the traffic's",
    }


def serve_warmup(
    serve: ServeContext, compiled: Any, indices: list[int]
) -> tuple[float, float | None]:
    """Serve the warm-up on `compiled`, each request synced: the user's own warm-up first (when
    the Traffic gives one), then the traffic's requests `indices`. Returns (seconds in all, the
    first request's answer as time.time(), or None when there was nothing to serve)."""
    want = set(indices)
    first = None
    t0 = time.perf_counter()
    for r in user_warmup(serve):
        serve.sync()
        serve.call(compiled, r.args)
        serve.sync()
        first = first or restart.now_unix()
    for r in serve.requests() if want else ():
        if r.index in want:
            serve.sync()
            serve.call(compiled, r.args)
            serve.sync()
            if first is None:
                first = restart.now_unix()
        if r.index >= max(want):
            break
    return time.perf_counter() - t0, first


def rejected_by_eager(serve: ServeContext, indices: set[int]) -> set[int]:
    """Which of the requests `indices` the model itself rejects (eager raises on them), checked off
    the clock on a fresh eager copy: no warm-up can make such a request compile, so it is no gap in
    the warm-up (it is the replay's error line already)."""
    if not indices:
        return set()
    eager, out = serve.fresh().model, set()
    for r in serve.requests():
        if r.index in indices:
            try:
                serve.call(eager, r.args)
            except Exception:  # noqa: BLE001 - the model rejects it
                out.add(r.index)
        if r.index >= max(indices):
            break
    return out


def proof_record(result: ReplayResult, rejected: set[int] | None = None) -> dict:
    """The proof's record: proven, the requests that would have compiled (with PyTorch's guards);
    `rejected`: requests the model itself rejects, kept apart (they are no gap in the warm-up)."""
    rejected = rejected or set()
    recompiled = [e for e in result.errors if "Detected recompile" in e["message"]]
    compiled = [
        {"request": e["request"], "shapes": e["shapes"], "reason": e.get("reason")}
        for e in recompiled
        if e["request"] not in rejected
    ]
    other = [e for e in result.errors if e not in recompiled or e["request"] in rejected]
    served = len(result.served)
    if compiled:
        proven, why = False, f"{len(compiled)} request(s) would have compiled"
    elif result.stopped:
        proven, why = None, f"not proven: {result.stopped}"
    elif served == 0:
        proven, why = None, "not proven: no request was served"
    else:
        proven, why = True, None
    return {
        "proven": proven,
        "why": why,
        "compiled_requests": compiled,
        "errors": other,
        "latencies_s": result.latencies_s,
        "requests": len(result.latencies_s),
        "method": PROOF_METHOD,
    }
