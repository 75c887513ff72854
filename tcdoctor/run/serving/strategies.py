"""Shape strategies judged on the traffic: each replays the same requests in a fresh process of its
own, with an empty cache folder (seeded with the machine's probed ISA checks), so its compiles are
its own cold ones.

The strategies (`STRATEGIES`, in order, their labels and `dynamic` experiments/shapes.py's, each against the reference, plain
`torch.compile` as the target compiles it):
- `static`: `dynamic=False`: one graph per distinct shape until `recompile_limit`, then the eager
  fallback for every new shape (the requests it served are named);
- `dynamic`: `dynamic=True`: symbolic shapes from the first request;
- `marked`: `torch._dynamo.mark_dynamic` on every dimension that varies across the traffic (found
  by producing the requests once, before the replay, and comparing their tensors' shapes), on each
  request's tensors before it is served (off the clock); a size-1 request still specialises (0/1),
  which PyTorch's guard then names;
- `padded`: each request's bucketed dimensions rounded up to the Traffic's bucket sizes (`make`
  called with them: the shapes a padding server feeds the model) and `dynamic=False`, the
  dimensions that still vary without a bucket (a batch size, where only the sequence length is
  bucketed) marked dynamic as `marked` does: one graph per bucket (a bucketed dimension is static,
  which is why a server pads), not one per batch size; the padded work is in the latency;
- `regional`: the model's repeated block (experiments/compile_remedies.py `repeated_block`, the
  project's one definition) compiled alone, instance by instance with `module.compile()`, the rest
  eager; where the model has none, the row says why.

Each process replays the traffic twice: the cold pass (its compiles, the time they took, the
requests served by the eager fallback, and `warmup_s`: the cold pass's latencies of the requests
that compiled, what a warm-up with this strategy's own set costs from an empty cache), then the
steady pass, whose latencies are the row's p50/p99 (the requests served by the fallback are left
out of the comparison with the reference, never out of the row).

Torch-free at import: the parent imports it (`_plan`, the strategies to run); the rest runs in each
strategy's own process.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ...experiments.shapes import (
    SERVED_LABELS,
    changing_dims,
    dim_names,
    mark_dims,
    served_override,
)
from ...report.sections.serving import ServeStrategy
from ..spec import ServeSpec
from ..stages import Where
from .part import Part, Serving
from .replay import replayed

if TYPE_CHECKING:
    from ...probes.traffic_replay import ServeContext

STRATEGIES = ("static", "dynamic", "marked", "padded", "regional")
NO_BUCKETS = "the Traffic gives no bucket sizes (Traffic.shapes(make, ..., buckets={dim: sizes}))"


def _when(run: Serving) -> str | None:
    """Why no strategy runs: no replay, --no-dynamic, or every request of the same shapes."""
    why = replayed(run)
    if why is not None:
        return why
    if run.options.dynamic is False:
        return "--no-dynamic"
    compiled = run.results["replay"].compiled
    distinct = len(set(compiled.shapes if compiled else []))
    if run.options.dynamic is None and distinct < 2:
        return "every request has the same shapes (--dynamic compares them anyway)"
    return None


def _plan(run: Serving) -> None:
    """Each strategy in a process of its own, each its share of what the earlier ones left."""
    names = list(STRATEGIES)
    if not (run.ask.traffic and run.ask.traffic.buckets):
        names.remove("padded")
        run.not_measured["padded"] = NO_BUCKETS
    end = time.monotonic() + run.share(PART)
    rows = []
    for i, name in enumerate(names):
        share = (end - time.monotonic()) / (len(names) - i)
        data = run.go(PART, share, "strategy", strategy=name)
        if data and data.get("row"):
            rows.append(
                ServeStrategy.from_dict({**data["row"], "cache_start": data.get("cache_start")})
            )
    run.results["strategies"] = rows


def varying_dims(ctx: ServeContext, padded: bool = False) -> list[tuple[int, int]]:
    """(tensor index, dim) of every dimension whose size varies across the traffic's requests
    (shapes.py `changing_dims`); `padded`: across the requests as a padding server feeds them,
    minus the dimensions the padding sets (those that differ between a request and its padded
    form: static per bucket)."""
    seen = changing_dims(r.args for r in ctx.requests(padded))
    if padded:
        return sorted(set(seen) - _padded_dims(ctx))
    return seen


def _padded_dims(ctx: ServeContext) -> set[tuple[int, int]]:
    """(tensor index, dim) of the dimensions padding changes in some request: the bucketed ones."""
    from ...probes import calls

    out: set[tuple[int, int]] = set()
    for raw, pad in zip(ctx.requests(), ctx.requests(True)):
        for i, (a, b) in enumerate(zip(calls.iter_tensors(raw.args), calls.iter_tensors(pad.args))):
            if a.dim() == b.dim():
                out |= {(i, d) for d in range(a.dim()) if a.shape[d] != b.shape[d]}
    return out


def _regional(ctx: ServeContext, model: Any) -> tuple[Any, dict]:
    """The model with each repeated-block instance compiled alone, or (None, {"why"})."""
    from ...experiments.compile_remedies import repeated_block

    block = repeated_block(model)
    if "why" in block:
        return None, {"why": block["why"]}
    args = ctx.compile_kwargs()
    for name in block["names"]:
        model.get_submodule(name).compile(**args)
    return model, {"block": block["block"], "blocks": len(block["names"]), "share": block["share"]}


def part_strategy(ctx: ServeContext, name: str) -> dict:
    """One strategy's row (see the module's docstring)."""
    import torch

    from ...probes import dynamo_state

    dynamo_state.fresh()
    model = ctx.fresh().model
    extra: dict = {}
    prepare = None
    if name == "regional":
        subject, extra = _regional(ctx, model)
        if subject is None:
            return {"name": name, "label": SERVED_LABELS[name], "not_measured": extra["why"]}
        kwargs = ctx.compile_kwargs()
    else:
        kwargs = ctx.compile_kwargs(**served_override(name))
        subject = torch.compile(model, **kwargs)
    padded = name == "padded"
    if name in ("marked", "padded"):  # padded: the dims that vary without buckets stay dynamic
        dims = varying_dims(ctx, padded)
        extra["marked"] = dim_names(ctx.workload.call_args, dims)
        prepare = (lambda r: mark_dims(r.args, dims)) if dims else None
    label = f"serving: strategy {name}"
    cold = ctx.replay(
        subject, f"{label} (cold)", padded=padded, prepare=prepare, compile_kwargs=kwargs
    )
    steady = ctx.replay(
        subject,
        f"{label} (steady)",
        padded=padded,
        prepare=prepare,
        compile_kwargs=kwargs,
        limit_hit=cold.limit_hit,
    )
    compiled_at = {c["request"] for c in cold.made}
    return {
        "name": name,
        "label": SERVED_LABELS[name],
        "compile_kwargs": {k: repr(v) for k, v in kwargs.items()},
        **extra,
        "latencies_s": steady.latencies_s,
        "cold_latencies_s": cold.latencies_s,
        "compiles": len(cold.made),
        "compile_events": cold.compiles,
        "compile_s": cold.compile_s,
        "warmup_s": sum(
            cold.latencies_s[i] or 0.0 for i in compiled_at if i < len(cold.latencies_s)
        ),
        "fallback_requests": cold.fallback_requests,
        "limit_hit": cold.limit_hit,
        "recompile_limit": cold.recompile_limit,
        "errors": cold.errors,
        "stopped": steady.stopped or cold.stopped,
        "method": "a fresh process with an empty cache: the traffic replayed cold (compiles, the "
        "eager fallback, warm-up cost: the cold latencies of the requests that compiled), then "
        "again (the steady latencies: p50, p99)",
    }


def _serve(ctx: Any, spec: ServeSpec, spawn: dict) -> None:
    ctx.put("row", part_strategy(ctx, spec.strategy or ""))


PART = Part(
    "strategies",
    Where.CHILDREN,
    _plan,
    needs=("replay",),
    when=_when,
    weight=3.0,
    serves={"strategy": _serve},
)
