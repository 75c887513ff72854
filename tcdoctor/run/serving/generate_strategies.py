"""The `generate_strategies` part (issue 60): cache and compile strategies for a Generation, each
in a fresh process of its own (an empty cache folder seeded with the machine's probed ISA checks),
judged against the reference with the serving section's one paired rule.

The strategies (`STRATEGIES`, in order):
- `dynamic`: the reference again (the user's `generate_kwargs`: the dynamic cache unless they
  say otherwise; `model.forward = torch.compile(model.forward)`): a second process of the reference's configuration, whose spread from the
  generate part's compiled process is the spread between processes that widens every interval;
- `static`: `cache_implementation="static"` with `max_cache_len` the traffic's longest prompt plus
  max_new_tokens (one cache length for every request: without it transformers sizes the cache per
  request, and each new size is a new shape), forward compiled;
- `prefill_eager`: the static cache as above, the prefill (a forward over more than one token)
  run eagerly and the one-token decode step compiled (gpt-fast's split): the decode's shapes never
  change, so it compiles once, and no prompt length ever compiles;
- `reduce_overhead`: the static cache, `mode="reduce-overhead"` (CUDA graphs): CUDA only; written,
  not measured on CUDA here (no GPU on this machine: the row says so).

Each process replays the prompts twice: cold (its compiles, their time, and `warmup_s`: the cold
request times of the requests that compiled, what warming up this strategy costs from an empty
cache) and steady, each request served eagerly (the user's generate_kwargs, the model's own
forward set back) and with the strategy back to back, the prompts in rounds until
`Rules.generation_pairs` pairs or the process's time (probes/generate.py `replay_paired`; the
row's TTFT, ITL, tokens/s are the strategy's half; every process serves the same rounds in the
same order, so its rows line up with the reference's by position). Judged (run/serving/generate_section.py
`judge`): per request, the strategy's steady request time (prompt to last token) over eager's
served beside it, against the same ratio in the generate part's compiled process, paired by
request, `report/processes/paired.py` `ratio_interval` at `Rules.serving_level` with
`Rules.min_pairs`, widened by the spread of that ratio between the reference's two processes
(`median_spread`). Each ratio is of one moment, so a phase of the host (a neighbour's load) in one
process moves both of its halves; comparing absolute times taken in two processes at two moments
(the method before) let such a phase decide. The cache's memory (`cache_bytes`) is computed from the model's config
(2 x layers x key-value heads x head dim x cache length x dtype size), not read from the
allocator: the longest request's length for the dynamic cache, `max_cache_len` for the static.

Torch-free at import: the parent imports it.
"""

from __future__ import annotations

import time
from typing import Any

from ...report.sections.generation import GenStrategy
from ..spec import ServeSpec
from ..stages import Where
from .generate import (
    PAIRED,
    Swap,
    compile_forward,
    generate_kwargs,
    generated,
    replay_paired,
    replay_side,
    round_lines,
    side_record,
)
from .part import Part, Serving

STRATEGIES = ("dynamic", "static", "prefill_eager", "reduce_overhead")
LABELS = {
    "dynamic": "your generate_kwargs, forward compiled (the reference, again)",
    "static": "static cache, forward compiled",
    "prefill_eager": "static cache, prefill eager, decode compiled",
    "reduce_overhead": 'static cache, mode="reduce-overhead" (CUDA graphs)',
}
NO_CUDA = "not measured on CUDA: CUDA graphs need a GPU, and none was found"
NO_REFERENCE = "the generate part's compiled side did not finish: nothing to judge against"
LOOP = (
    "your own loop: its cache is yours (the strategies are a Hugging Face model's generate "
    "settings: cache_implementation, the forward compiled)"
)


def _when(run: Serving) -> str | None:
    if run.ask.generation and run.ask.generation.loop:
        return LOOP
    compiled = generated(run).compiled
    return None if compiled and compiled.steady else NO_REFERENCE


def _plan(run: Serving) -> None:
    """Each strategy in a process of its own: `dynamic` first with all the time left (it is the
    reference's second process, whose spread the headline's interval needs to decide at all: with
    a third of the time, at the default --timeout, its cold replay ended at its deadline and it
    served no pair), then each other its share of what the earlier ones left."""
    eager = generated(run).eager
    names = list(STRATEGIES)
    if not (eager and eager.side and eager.side.device == "cuda"):
        names.remove("reduce_overhead")
        run.not_measured["generate_reduce_overhead"] = NO_CUDA
    end = time.monotonic() + run.share(PART)
    rows = []
    for i, name in enumerate(names):
        share = (end - time.monotonic()) / (len(names) - i)
        if name == "dynamic":  # it stops when its replays end, leaving the rest to the others
            share = max(share, run.left_s())
        data = run.go(PART, share, "generate_strategy", strategy=f"generate_{name}")
        if data and data.get("row"):
            row = GenStrategy.from_dict({**data["row"], "cache_start": data.get("cache_start")})
            rows.append(row)
            for line in round_lines(row, f"strategy {name}"):
                run.failures.append({"phase": "serving:generate_strategies", "message": line})
    run.results["generate_strategies"] = rows


def cache_bytes(config: Any, length: int, itemsize: int) -> int | None:
    """The KV cache's bytes for `length` tokens from the config's shapes (None: not a config
    with heads and layers)."""
    layers = getattr(config, "num_hidden_layers", None)
    heads = getattr(config, "num_attention_heads", None)
    hidden = getattr(config, "hidden_size", None)
    if not (layers and heads and hidden):
        return None
    kv = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    return int(2 * layers * kv * head_dim * length * itemsize)


def longest(ctx: Any) -> int:
    """The traffic's longest prompt plus max_new_tokens (produced once, off the clock)."""
    from ...target.generation import prompt_of

    lengths = [int(prompt_of(r.args).shape[-1]) for r in ctx.requests()]
    return max(lengths or [0]) + ctx.workload.max_new_tokens


def prefill_eager(ctx: Any, model: Any) -> dict:
    """The prefill eager, the one-token decode step compiled (see the module's docstring)."""
    import torch

    kwargs = ctx.compile_kwargs()
    eager = model.forward
    decode = torch.compile(eager, **kwargs)

    def forward(*args: Any, **kw: Any) -> Any:
        ids = kw.get("input_ids", args[0] if args else None)
        return eager(*args, **kw) if ids is not None and ids.shape[-1] > 1 else decode(*args, **kw)

    model.forward = forward
    return kwargs


def part_strategy(ctx: Any, name: str) -> dict:
    """One strategy's row (see the module's docstring)."""
    from ...probes import dynamo_state

    dynamo_state.fresh()
    model = ctx.fresh().model
    ctx.call(model, ctx.workload.call_args)  # the runtime's lazy start, untimed, eager
    extra: dict = {}
    length = longest(ctx)
    if name != "dynamic":  # the reference keeps the user's own cache setting
        extra = {"cache_implementation": "static", "max_cache_len": length}
    kw = generate_kwargs(ctx, "compiled", extra)
    swap = Swap(model)
    if name == "prefill_eager":
        compile_kwargs = prefill_eager(ctx, model)
    else:
        mode = {"mode": "reduce-overhead"} if name == "reduce_overhead" else {}
        compile_kwargs = compile_forward(ctx, model, **mode)
    cold = replay_side(ctx, model, kw, f"generation: strategy {name} (cold)", compile_kwargs)
    kws = {"eager": generate_kwargs(ctx, "eager"), "compiled": kw}
    label = f"generation: strategy {name} (steady, paired with eager)"
    steady, paired = replay_paired(ctx, model, kws, swap, label)
    made = [c for c in cold.compiles if c["kind"] in ("compile", "recompile")]
    compiled_at = {c["request"] for c in made}
    itemsize = next(iter(model.parameters())).element_size()
    return {
        "name": name,
        "label": LABELS[name],
        "compile_kwargs": {k: repr(v) for k, v in compile_kwargs.items()},
        "cache_length": length if name != "dynamic" else None,
        "cache_bytes": cache_bytes(model.config, length, itemsize),
        "compiles": len(made),
        "compile_s": sum(c.get("seconds") or 0.0 for c in cold.compiles),
        "warmup_s": sum(cold.total_s[i] or 0.0 for i in compiled_at if i < len(cold.total_s)),
        "cold": side_record(cold, kw),
        "steady": side_record(steady, kw),
        "paired_eager": side_record(paired, kws["eager"], method=PAIRED),
        "method": "a fresh process with an empty cache: the prompts replayed cold (compiles, "
        "warm-up cost: the cold request times of the requests that compiled), then again, each "
        "request served eager and with this strategy back to back (the steady figures; per "
        "request the strategy / eager ratio of one moment, judged against the reference's)",
    }


def _serve(ctx: Any, spec: ServeSpec, spawn: dict) -> None:
    ctx.put("row", part_strategy(ctx, (spec.strategy or "").removeprefix("generate_")))


PART = Part(
    "generate_strategies",
    Where.CHILDREN,
    _plan,
    needs=("generate",),
    when=_when,
    weight=3.0,
    serves={"generate_strategy": _serve},
    generation=True,
)
