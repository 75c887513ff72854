"""The `replay` part: the traffic served eager, then compiled, in one fresh process (an empty cache
folder seeded with the machine's probed CPU ISA checks: a server's cold start)
(probes/traffic_replay.py); the warm-up set is derived from the compiled side's compiles
(probes/warmup.py). Every later part needs it: `replayed` and `derived` are their conditions.

Torch-free at import: the parent imports it; `part_replay` runs in the part's own process.
"""

from __future__ import annotations

from typing import Any

from ..spec import ServeSpec
from ..stages import Where
from .part import REPLAY_UNFINISHED, Part, Serving
from .section import ReplayPart, request_errors, typed, yours

NO_WARMUP = "the replay's compiled side did not finish: no warm-up was derived"
CPU_HOST = "on CPU the host thread runs the kernels: the host time is the latency"
REPLAY_METHOD = (
    "one request at a time in traffic order, synced before and after each (perf_counter around "
    "the call); compiles are the CompilationMetrics entries PyTorch added during each request; the "
    "eager fallback after recompile_limit as PyTorch records it (the metrics entry's fail_reason), "
    "later requests classified off the clock with PyTorch's guard-complete hook"
)


def replayed(run: Serving) -> str | None:
    """Why a part that needs the replay's results does not run (None: it runs)."""
    return None if run.results.get("replay") is not None else REPLAY_UNFINISHED


def derived(run: Serving) -> str | None:
    """Why a part that serves the warm-up does not run: no replay, or no warm-up derived."""
    why = replayed(run)
    if why is None and run.results["replay"].warmup is None:
        return NO_WARMUP  # the compiled side did not finish: nothing to warm up or prove
    return why


def warmup_requests(run: Serving) -> list[int]:
    """The warm-up the later parts serve: the proof checks the user's own warm-up where the
    Traffic gives one (served first by every part that warms up: probes/warmup.py serve_warmup),
    else the set derived from the replay's compiles."""
    if yours(run.ask):
        return []
    warmup = run.results["replay"].warmup
    return warmup.requests if warmup else []


def _plan(run: Serving) -> None:
    replay = run.results["replay"] = typed(run.go(PART, run.share(PART)), ReplayPart)
    for line in request_errors(replay):
        run.failures.append({"phase": "serving:requests", "message": line})


def part_replay(ctx: Any) -> None:
    """The `replay` part: eager then compiled (a fresh Dynamo state, the cache folder empty but for
    the machine's probed ISA checks), then the warm-up derived from the compiled side's compiles.
    One eager call on the example inputs comes first, untimed: the runtime's lazy start (allocator,
    thread pool) is paid before either side, so neither side's first request carries it. The
    user's own warm-up (`Traffic(warmup=...)`), when given, is served first on each side, as the
    server's start-up: on the compiled side it is timed and its compiles are the start-up's
    (`startup`), so the traffic's compiles are those the warm-up did not cover."""
    from ...probes import dynamo_state, warmup

    method = REPLAY_METHOD + ("" if ctx.device.type == "cuda" else f"; {CPU_HOST}")
    ctx.put("method", f"{ctx.n} requests replayed eager, then compiled, in one fresh process")
    ctx.put("process", "replay")
    eager_model = ctx.fresh().model
    ctx.call(eager_model, ctx.workload.call_args)
    warmup.run_user_warmup(ctx, eager_model, "serving: your warm-up (eager)")
    eager = ctx.replay(eager_model, f"serving: replaying {ctx.n} requests (eager)")
    ctx.put("eager", {**eager.to_dict(), "method": method})
    dynamo_state.fresh()
    model = ctx.compile(ctx.fresh().model)
    started = warmup.run_user_warmup(ctx, model, "serving: your warm-up (compiled)")
    if started is not None:
        ctx.put("startup", warmup.startup_record(started))
    label = f"serving: replaying {ctx.n} requests (compiled)"
    compiled = ctx.replay(model, label, limit_hit=started.limit_hit if started else None)
    ctx.put("compiled", {**compiled.to_dict(), "method": method})
    ctx.put("warmup", warmup.derive(compiled, ctx))


def _serve(ctx: Any, spec: ServeSpec, spawn: dict) -> None:
    part_replay(ctx)


PART = Part("replay", Where.CHILDREN, _plan, weight=3.0, serves={"replay": _serve})
