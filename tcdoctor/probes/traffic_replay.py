"""Replay a traffic one request at a time, as a server that handles one request at a time sees it.

`replay(fn, requests, call, sync, *, deadline)` is the one replay of the serving section: the eager
and compiled sides, the warm-up proof, each shape strategy, the host-time rows and the AOT package
(probes/aot.py) all call it, so every side's latency is measured the same way.

Method, per request (in traffic order):
- the request is produced (the traffic's generator or `make` runs here, off the clock);
- `sync()`; t0 = perf_counter; `call(fn, request.args)`; (CUDA: the host time is read here, before
  the drain); `sync()`; latency = perf_counter - t0. Each request is synced on its own, before and
  after, so no request's device work spills into the next one's figure;
- the CompilationMetrics entries PyTorch added during the request are its compiles (one per frame
  Dynamo compiled: a graph break makes several), each with its frame compile time
  (`entire_frame_compile_time_s`), the guard that failed (`recompile_reason`, in PyTorch's words,
  reduced to its guard lines by `recompiles.plain_reason`) and its `fail_type`/`fail_reason`;
- the eager fallback after `recompile_limit`: PyTorch records the request that hits the limit (its
  metrics entry's fail_reason "Dynamo recompile limit exceeded", fail_type 'Unsupported', and the
  warning "torch._dynamo hit config.recompile_limit (N)"); that request runs eagerly, and from then
  on the frame only runs the entries it has (torch 2.13 sets the frame's strategy to RUN_ONLY): a
  request that matches none runs eagerly and PyTorch records nothing. So every later request that
  compiled nothing is run once more, off the clock, with PyTorch's guard-complete hook
  (`torch._C._dynamo.eval_frame.set_guard_complete_hook`, which Dynamo calls with whether a cache
  entry's guards passed): a miss means the request was served by the eager fallback. Verified on
  torch 2.13: with recompile_limit 3 and batch sizes 1,2,3,4,5,2,6,1, the hook reports a miss for
  4, 5 and 6 and a hit for 2 and 1 (tests/test_traffic_replay.py). The re-run costs nothing before
  the limit is hit, and is never inside a timed figure.
- a request the model rejects (it raises): its index, shapes and the exception's first line are
  kept as an error and the replay goes on with the next request, as a server answers an error and
  serves the next one; after MAX_ERRORS errors the replay stops. A traffic that cannot produce a
  request (its generator raised) stops the replay there. The requests already replayed are kept.

Host and device time: on CPU the host thread runs the kernels, so the host time is the latency
(`host_s` is None and the method says so). On CUDA, `host_s` is the time until `call` returned
(Python, Dynamo's guards, the wrapper and the kernel launches) and `device_s` the CUDA events'
elapsed time between the first launch and the last kernel (not measured on this machine: no GPU).

Pitfalls: the first request of a compiled side includes the compile (a server's cold start: that is
the figure); the process must run nothing compiled before the replay for its compiles to be the
traffic's (run/serving/replay.py starts each side in a fresh Dynamo state). Outputs are handed to `keep`
after the clock stopped (threads and AOT compare them with eager's).
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import torch

from ..target.traffic import Request, TrafficError
from ..target.workload import CallArgs
from . import dynamo_state
from .first_call import function_name
from .recompiles import plain_reason

if TYPE_CHECKING:
    from ..report.events import Event

MAX_ERRORS = 5  # requests the model may reject before a replay stops
_LIMIT = re.compile(r"recompile limit|recompile_limit|cache_size_limit|cache size limit", re.I)
_GUARD_LINE = re.compile(r"^\s*-\s*\d+/\d+:")


@dataclasses.dataclass
class ReplayResult:
    """One side's replay: per request (by traffic index, None where it was not served) its
    latency, host time (CUDA only) and device time (CUDA only); the compiles PyTorch recorded; the
    errors; the requests served by the eager fallback; why it stopped early (None: it did not)."""

    latencies_s: list[float | None] = dataclasses.field(default_factory=list)
    host_s: list[float | None] | None = None
    device_s: list[float | None] | None = None
    shapes: list[str] = dataclasses.field(default_factory=list)
    compiles: list[dict] = dataclasses.field(default_factory=list)
    errors: list[dict] = dataclasses.field(default_factory=list)
    fallback_requests: list[int] = dataclasses.field(default_factory=list)
    recompile_limit: int | None = None
    limit_hit: dict | None = None
    stopped: str | None = None
    wall_s: float = 0.0

    @property
    def served(self) -> list[float]:
        """The latencies of the requests served (errors left out)."""
        return [x for x in self.latencies_s if x is not None]

    @property
    def made(self) -> list[dict]:
        """The compiles that made a graph (neither a limit hit nor a failed compile)."""
        return [c for c in self.compiles if c["kind"] in ("compile", "recompile")]

    @property
    def compile_s(self) -> float:
        return float(sum(c.get("seconds") or 0.0 for c in self.compiles))

    def to_dict(self) -> dict:
        return {
            "latencies_s": list(self.latencies_s),
            "host_s": self.host_s,
            "device_s": self.device_s,
            "shapes": list(self.shapes),
            "compiles": list(self.compiles),
            "compile_s": self.compile_s,
            "errors": list(self.errors),
            "fallback_requests": list(self.fallback_requests),
            "recompile_limit": self.recompile_limit,
            "limit_hit": self.limit_hit,
            "stopped": self.stopped,
            "requests": len(self.latencies_s),
            "wall_s": self.wall_s,
        }


def recompile_limit(compile_kwargs: dict | None = None) -> int | None:
    """The limit in force: `torch.compile(recompile_limit=N)` where the target passes it
    (`Workload(compile_kwargs={"recompile_limit": N})`), else `torch._dynamo.config.recompile_limit`
    (which a target may set in build())."""
    if compile_kwargs and compile_kwargs.get("recompile_limit") is not None:
        return int(compile_kwargs["recompile_limit"])
    value = getattr(torch._dynamo.config, "recompile_limit", None)
    return int(value) if value is not None else None


def compile_event(m: Any, request: Request) -> dict:
    """One CompilationMetrics entry of a request, in the report's words."""
    reason = getattr(m, "recompile_reason", None)
    fail = str(getattr(m, "fail_reason", None) or "")
    failed = getattr(m, "fail_type", None)
    if _LIMIT.search(fail):
        kind = "limit"  # recompile_limit hit: nothing compiled, the request ran eagerly
    elif failed:
        kind = "failed"  # the compile raised (a request the model rejects): nothing compiled
    else:
        kind = "recompile" if reason else "compile"
    return {
        "request": request.index,
        "shapes": request.shapes,
        "seconds": getattr(m, "entire_frame_compile_time_s", None),
        "reason": plain_reason(reason) if reason else None,
        "compile_id": str(getattr(m, "compile_id", None)),
        "kind": kind,
        "function": function_name(m, "compiled function"),
        "fail_type": getattr(m, "fail_type", None),
        "fail_reason": fail.strip().splitlines()[0] if fail.strip() else None,
    }


def guard_failures(text: str) -> str | None:
    """The guard failures an exception names (set_stance("fail_on_recompile")'s 'triggered by the
    following guard failure(s)'), reduced to their guard lines; None when it names none."""
    lines = [ln for ln in str(text).splitlines() if _GUARD_LINE.match(ln)]
    return plain_reason("\n".join(lines)) if lines else None


def _error(request: Request, exc: BaseException) -> dict:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return {
        "request": request.index,
        "shapes": request.shapes,
        "message": f"{type(exc).__name__}: {first}".rstrip(": ")[:300],
        "reason": guard_failures(text),
    }


def served_by_fallback(fn: Any, args: CallArgs, call: Callable[[Any, CallArgs], Any]) -> bool:
    """Whether a cache entry missed when `fn(args)` runs now (off the clock): PyTorch's
    guard-complete hook sees every guard lookup of a frame that has cache entries."""
    from torch._C._dynamo.eval_frame import set_guard_complete_hook

    seen: list[bool] = []
    previous = set_guard_complete_hook(lambda hit: seen.append(bool(hit)))
    try:
        call(fn, args)
    except Exception:  # noqa: BLE001 - the timed run served it; this look only classifies
        pass
    finally:
        set_guard_complete_hook(previous)
    return any(hit is False for hit in seen)


def replay(
    fn: Any,
    requests: Iterable[Request],
    call: Callable[[Any, CallArgs], Any],
    sync: Callable[[], None],
    *,
    deadline: float,
    device: torch.device | None = None,
    compile_kwargs: dict | None = None,
    keep: Callable[[int, Any], None] | None = None,
    max_errors: int = MAX_ERRORS,
    limit_hit: dict | None = None,
) -> ReplayResult:
    """Serve `requests` one at a time through `call(fn, request.args)`, each synced on its own.

    `fn`: what is served (the eager model, the compiled one, an AOT package's runner);
    `requests`: the traffic's requests (target/traffic.py `requests`; a TrafficError from it stops
    the replay with one error naming the request); `call`: one call as the user makes it (no_grad,
    autocast: experiments/pair.py `caller`); `sync`: drains the device (calls.synchronizer);
    `deadline`: a `time.monotonic()` value after which no request starts (`stopped` says so);
    `device`: a CUDA device gets host and device times apart; `compile_kwargs`: the target's
    (for the recompile limit in force); `keep(index, output)`: called with each output, off the
    clock; `limit_hit`: the limit was already hit in this process (an earlier replay's `limit_hit`),
    so every request that compiles nothing is checked for the eager fallback from the first one.
    """
    cuda = device is not None and device.type == "cuda"
    out = ReplayResult(recompile_limit=recompile_limit(compile_kwargs), limit_hit=limit_hit)
    if cuda:
        out.host_s, out.device_s = [], []
    for request in each_request(requests, out, deadline, max_errors, {"reason": None}):
        _one(fn, request, call, sync, out, cuda, keep)
    return out


def each_request(
    requests: Iterable[Request],
    out: Any,
    deadline: float,
    max_errors: int = MAX_ERRORS,
    extra: dict | None = None,
) -> Iterator[Request]:
    """The requests one at a time, as every replay serves them (this one and probes/generate.py's):
    none starts after `deadline` (a `time.monotonic()` value); a TrafficError (the traffic could
    not produce a request) is one error and stops the replay; after `max_errors` errors it stops.
    The caller serves each request yielded and appends its errors to `out.errors`; `out.stopped`
    says why it stopped early, `out.wall_s` the replay's time (set when the loop ends). `extra`:
    the fields a TrafficError's error carries besides request, shapes and message."""
    t_start = time.perf_counter()
    it, served = iter(requests), 0
    try:
        while True:
            if time.monotonic() > deadline:
                out.stopped = f"the part's time ran out after {served} requests"
                return
            try:
                request = next(it)
            except StopIteration:
                return
            except TrafficError as exc:
                error = {"request": exc.index, "shapes": None, "message": str(exc)}
                out.errors.append({**error, **(extra or {})})
                out.stopped = f"the traffic could not produce request {exc.index}"
                return
            yield request
            served += 1
            if len(out.errors) >= max_errors:
                out.stopped = f"{len(out.errors)} requests failed: the replay stopped"
                return
    finally:
        out.wall_s = time.perf_counter() - t_start


def _one(
    fn: Any,
    request: Request,
    call: Callable[[Any, CallArgs], Any],
    sync: Callable[[], None],
    out: ReplayResult,
    cuda: bool,
    keep: Callable[[int, Any], None] | None,
) -> None:
    """One request: timed, its compiles and fallback read, its output kept (all off the clock)."""
    mark = dynamo_state.Mark()
    start = end = None
    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    result, error, host = None, None, None
    sync()
    t0 = time.perf_counter()
    try:
        if start is not None:
            start.record()
        result = call(fn, request.args)
        host = time.perf_counter() - t0
        if end is not None:
            end.record()
        sync()
    except Exception as exc:  # noqa: BLE001 - a request the model rejects is a finding
        error = exc
    latency = time.perf_counter() - t0
    new = mark.since()
    events = [compile_event(m, request) for m in new]
    out.compiles += events
    out.shapes.append(request.shapes)
    if error is not None:
        out.latencies_s.append(None)
        out.errors.append(_error(request, error))
        if cuda:
            out.host_s.append(None)  # type: ignore[union-attr]
            out.device_s.append(None)  # type: ignore[union-attr]
        return
    out.latencies_s.append(latency)
    if cuda:
        out.host_s.append(host)  # type: ignore[union-attr]
        out.device_s.append(start.elapsed_time(end) / 1e3 if start and end else None)  # type: ignore[union-attr]
    limit = next((e for e in events if e["kind"] == "limit"), None)
    if limit is not None:
        if out.limit_hit is None:
            out.limit_hit = {"request": request.index, "message": limit["fail_reason"]}
        out.fallback_requests.append(request.index)
    elif out.limit_hit is not None and not events:
        if served_by_fallback(fn, request.args, call):
            out.fallback_requests.append(request.index)
    if keep is not None:
        keep(request.index, result)


# -- the process every serving part replays in ------------------------------------------------


@dataclasses.dataclass
class ServeContext:
    """What a serving process's part is given (run/serving/child.py builds it): the workload as build()
    returned it and fresh copies of it, the traffic and N, the options, the device, its deadline
    and its event sink. Its methods are the one way each part makes requests, calls, compiles and
    replays, so every part's figures are taken alike."""

    workload: Any
    fresh: Callable[[], Any]  # a pristine copy of the workload (target/pristine.py)
    traffic: Any  # target/traffic.py Traffic
    n: int
    options: Any  # options.Options
    device: torch.device
    deadline: float  # time.monotonic() after which no request starts
    sink: Callable[[Event | dict], None]  # the proof, host and warm-up parts send Events
    target: str = ""  # `path.py:function`, for the warm-up script
    files: str | None = None  # a folder for side files (the generation's logits), None: none kept

    def requests(
        self, padded: bool = False, prepare: Callable[[Request], None] | None = None
    ) -> Iterable[Request]:
        """The traffic's first N requests, every RNG reset first (each replay and each process
        sees the same requests); `prepare(request)` runs on each before it is served (off the
        clock: mark_dynamic)."""
        from ..target.pristine import reset_rng_state
        from ..target.traffic import requests

        reset_rng_state()
        for r in requests(self.traffic, self.workload, self.n, padded):
            if prepare is not None:
                prepare(r)
            yield r

    def call(self, fn: Any, ca: CallArgs) -> Any:
        """One request as the workload is called: no_grad unless grad=True, autocast if asked."""
        from .calls import call

        return call(fn, ca, self.workload, self.device)

    def put(self, key: str, data: Any) -> None:
        """One finished piece of the part's result, streamed at once (a later crash or kill of the
        process keeps it: run/serving/part.py merges the pieces)."""
        self.sink({"event": "result", "key": key, "data": data})

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def compile_kwargs(self, **override: Any) -> dict:
        """torch.compile's arguments as the target compiles (its compile_kwargs, the analysis's
        backend and mode), with `override` on top (a strategy's `dynamic`)."""
        from .first_call import compile_args

        kw = {k: v for k, v in self.workload.compile_kwargs.items() if k not in override}
        return compile_args(self.options.backend, self.options.mode, {**kw, **override})

    def compile(self, model: Any, **override: Any) -> Any:
        return torch.compile(model, **self.compile_kwargs(**override))

    def replay(self, fn: Any, label: str, **kw: Any) -> ReplayResult:
        """`replay` of this process's traffic, announced as one progress step named `label`;
        `padded`, `prepare`: as `requests`; the rest goes to `replay`."""
        padded, prepare = kw.pop("padded", False), kw.pop("prepare", None)
        kw.setdefault("deadline", self.deadline)
        kw.setdefault("compile_kwargs", self.compile_kwargs())
        self.sink({"event": "start", "phase": label})
        t0 = time.perf_counter()
        result = replay(
            fn,
            self.requests(padded, prepare),
            self.call,
            self.sync,
            device=self.device,
            **kw,
        )
        self.sink({"event": "done", "phase": label, "seconds": time.perf_counter() - t0})
        return result
