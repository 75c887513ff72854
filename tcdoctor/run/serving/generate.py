"""The `generate` part (issue 60): a Generation's prompts served by `model.generate`, eager in one
fresh process, then compiled as a user compiles a Hugging Face model (`model.forward =
torch.compile(model.forward, backend=...)`) in another (probes/generate.py: the method and its
pitfalls). Each process starts from an empty cache folder seeded with the machine's probed ISA
checks (a server's cold start).

Each process makes one untimed eager forward on the example prompt first (the runtime's lazy start:
allocator, thread pool), so neither side's first request carries it. The compiled side replays the
prompts twice: cold (its compiles: each with its request, decode step, cache length and guard) and
steady (the same compiled model, once compiled), each steady request served eager and compiled
back to back (`replay_paired`, `Swap`: the model's own forward set back for the eager half), the
prompts in rounds until `Rules.generation_pairs` pairs or the part's time (the cold replay is one
pass; a request whose tokens change between rounds is a finding, `round_lines`): the
pairs the verdict and the cache strategies are judged on (run/serving/generate_section.py), each
of one moment of the host. Each side keeps its cold replay's step logits off the clock
and writes them to its side file in the run's folder (ServeSpec.files); the compiled process,
started after the eager one ended, compares its own with eager's file before its steady replay
(probes/generate_logits.py: the method) and streams the comparison as its `logits` result. The eager side sets `disable_compile=True` unless the user's
generate_kwargs say otherwise: on CUDA with a static cache transformers compiles the forward by
itself inside generate (`_valid_auto_compile_criteria`), and the eager reference must be eager;
whether it would have is the side's `auto_compile` (not measured on CUDA: no GPU here).

For the user's own loop (target/generation_loop.py; probes/generate_loop.py) the same parts run the
same way: the compiled side is the decode step compiled (`decode = torch.compile(decode, ...)`,
gpt-fast's), the prefill eager; `LOOP_METHOD` says how its tokens are timed. The cache strategies
are a Hugging Face model's generate settings and do not run for a loop (its cache is the user's).

Torch-free at import: the parent imports it; `serve_generation` runs in the part's processes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ...report.record import Record
from ...report.sections.generation import GenSide, GenStrategy
from ...thresholds import RULES
from ..spec import ServeSpec
from ..stages import Where
from .part import Part, Serving

SIDES = ("eager", "compiled")
PAIRED = (
    "the decision's eager side: in the compiled process, after its cold replay, each request "
    "served eager and compiled back to back (which goes first alternating), eager by setting the "
    "model's own forward back (your loop's decode; no second compile), so a phase of the host "
    "falls on both halves of a pair; the eager side's own process stays for eager's tokens, "
    "logits and the TTFT/ITL a fresh never-compiled server sees"
)
METHOD = (
    "one request at a time in traffic order through model.generate (greedy, exactly "
    "max_new_tokens new tokens), each token timed in a streamer's put (device synced); TTFT: the "
    "first token's time from the call; ITL: between consecutive tokens; compiles: the "
    "CompilationMetrics entries PyTorch added, attributed to the decode step whose put followed them"
)
LOOP_METHOD = (
    "one request at a time in traffic order through your own loop: cache(model), prefill(model, "
    "ids, positions, cache), then decode(model, token, position, cache) per new token (greedy: the "
    "argmax of the last position's logits, read to the host, device synced, then timed); TTFT: the "
    "first token's time from the request's start (its cache made); ITL: between consecutive "
    "tokens; compiles: the CompilationMetrics entries PyTorch added during each step"
)


@dataclass
class GenProcess(Record):
    """One generate process's result (`serve_generation`'s pieces), read once in the parent: its
    cold replay (`side`); the compiled one's steady replay, the eager one paired with it, and its
    step logits against eager's (probes/generate_logits.py, or {"why": ...})."""

    process: str | None = None
    side: GenSide | None = None
    steady: GenSide | None = None
    paired_eager: GenSide | None = None
    logits: dict[str, Any] | None = None
    cache_start: str | None = None


@dataclass
class Generated(Record):
    """The generate part's result (`Serving.results["generate"]`): each side's process, or None."""

    eager: GenProcess | None = None
    compiled: GenProcess | None = None


def generated(run: Serving) -> Generated:
    """The generate part's result (empty when it did not run)."""
    return run.results.get("generate") or Generated()


def _plan(run: Serving) -> None:
    """Eager in one process (half the part's share), then compiled in another with all the time
    left: every later generation part needs its result (the proof's warm-up is derived from its
    compiles, the strategies are judged against its pairs), so a share that ends before its cold
    compiles do leaves nothing measured (on samples/generate.py with Inductor at load 5-7: an 87 s
    share, ~100 s of compiling, killed; the strategies not run and their time given to the
    experiments). It stops when its replays end, leaving the rest to the later parts."""
    eager = run.go(PART, run.share(PART) / 2, "generate_eager", files=run.workdir)
    compiled = run.go(PART, run.left_s(), "generate_compiled", files=run.workdir)
    out = run.results["generate"] = Generated.from_dict({"eager": eager, "compiled": compiled})
    for line in request_errors(out) + round_lines(out.compiled, "compiled"):
        run.failures.append({"phase": "serving:generate", "message": line})


def round_lines(process: GenProcess | GenStrategy | None, where: str) -> list[str]:
    """One line per request whose tokens in a later round of the paired replay differed from its
    first round's (probes/generate.py `round_changes`): the same prompt, greedy, the same model."""
    lines = []
    for side in (process.steady, process.paired_eager) if process else ():
        for c in (side.round_changes if side else None) or []:
            lines.append(
                f"generation ({where} process): request {c['request']}'s {c['side']} tokens in "
                f"round {c['round'] + 1} differ from its first round's at step {c['step']}"
            )
    return lines


def request_errors(out: Generated) -> list[str]:
    """One line per request a side could not serve (eager's first: a request both reject is named
    once), naming the request, its shapes and the decode step it reached."""
    lines, seen = [], set()
    for side in SIDES:
        process = getattr(out, side)
        for e in (process.side.errors if process and process.side else None) or []:
            if e.get("request") in seen:
                continue
            seen.add(e.get("request"))
            step = f" at step {e['step']}" if e.get("step") is not None else ""
            shapes = f" {e['shapes']}" if e.get("shapes") else ""
            lines.append(
                f"generation: request {e['request']}{shapes} failed{step} ({side}): {e['message']}"
            )
    return lines


def generate_kwargs(ctx: Any, side: str, extra: dict | None = None) -> dict:
    """generate's keyword arguments for `side`: the Generation's (greedy, exactly max_new_tokens),
    `extra` (a cache strategy's) on top; the eager side's auto-compile turned off."""
    kw = {**ctx.workload.call_generate_kwargs(), **(extra or {})}
    if side == "eager" and not ctx.workload.loop:
        kw.setdefault("disable_compile", True)
    return kw


def auto_compile(ctx: Any, kw: dict) -> bool:
    """Whether transformers would compile the forward by itself inside generate: a compileable
    (not dynamic) cache on CUDA, or compile_config's _compile_all_devices (transformers 5.23
    `_valid_auto_compile_criteria`), and not disable_compile."""
    if kw.get("disable_compile"):
        return False
    static = kw.get("cache_implementation") in ("static", "hybrid", "sliding_window")
    return bool(static and ctx.device.type == "cuda")


def compile_forward(ctx: Any, model: Any, **override: Any) -> dict:
    """`model.forward = torch.compile(model.forward, ...)`, as a user compiles a HF model (for
    the user's own loop, `decode = torch.compile(decode, ...)`, as gpt-fast compiles it); the
    compile arguments it used."""
    import torch

    kwargs = ctx.compile_kwargs(**override)
    if ctx.workload.loop:  # model: target/generation_loop.LoopStep
        model.decode = torch.compile(model.decode, **kwargs)
        return kwargs
    model.forward = torch.compile(model.forward, **kwargs)
    return kwargs


def side_record(res: Any, kw: dict, **extra: Any) -> dict:
    """A replay's record with what it was asked."""
    return {
        **res.to_dict(),
        "generate_kwargs": {k: repr(v) for k, v in kw.items()},
        "method": METHOD,
        **extra,
    }


def serve_generation(ctx: Any, side: str) -> None:
    """One side in this process (see the module's docstring)."""
    from ...probes import dynamo_state
    from ...probes import generate_logits as gl

    ctx.put("process", f"generate_{side}")
    dynamo_state.fresh()
    model = ctx.fresh().model
    ctx.call(model, ctx.workload.call_args)  # the runtime's lazy start, untimed, eager
    kw = generate_kwargs(ctx, side)
    swap = Swap(model, ctx.workload.loop)
    compile_kwargs = compile_forward(ctx, model) if side == "compiled" else None
    label = f"generation: {ctx.n} requests ({side}{', cold' if compile_kwargs else ''})"
    logits = gl.StepLogits() if ctx.files else None
    res = replay_side(ctx, model, kw, label, compile_kwargs, logits=logits)
    extra = {"auto_compile": auto_compile(ctx, kw), "device": ctx.device.type}
    if ctx.workload.loop:
        extra["method"] = LOOP_METHOD
    if compile_kwargs is not None:
        extra["compile_kwargs"] = {k: repr(v) for k, v in compile_kwargs.items()}
    ctx.put("side", side_record(res, kw, **extra))
    if logits is not None:  # off every clock: after the replay; eager's file is read by compiled
        if side == "compiled":
            ctx.put("logits", gl.against_eager(ctx.files, logits, res.tokens))
        else:
            logits.save(gl.side_file(ctx.files, side), res.tokens)
    if compile_kwargs is not None:
        kws = {"eager": generate_kwargs(ctx, "eager"), "compiled": kw}
        label = (
            f"generation: {ctx.n} requests in rounds to {RULES.generation_pairs} pairs (eager and "
            "compiled paired, steady)"
        )
        steady, paired = replay_paired(ctx, model, kws, swap, label)
        method = {"method": extra["method"]} if "method" in extra else {}
        ctx.put("steady", side_record(steady, kw, **method))
        how = f"{PAIRED}; {extra.get('method', METHOD)}"
        ctx.put("paired_eager", side_record(paired, kws["eager"], method=how))


class Swap:
    """The model's own `forward` (a loop's `decode`) and what compiling put in its place, set by
    attribute assignment (`swap(side)`): the paired replay's eager side is the same model object
    with its own function back, never a second compile. Made before the compile; the compiled
    function is read at the first swap."""

    def __init__(self, model: Any, loop: bool = False) -> None:
        self.model, self.attr = model, "decode" if loop else "forward"
        self.eager = getattr(model, self.attr)
        self.compiled: Any = None

    def __call__(self, side: str) -> None:
        if self.compiled is None:
            self.compiled = getattr(self.model, self.attr)
        setattr(self.model, self.attr, self.eager if side == "eager" else self.compiled)


def replay_paired(
    ctx: Any, model: Any, kws: dict[str, dict], swap: Swap, label: str, pairs: int | None = None
) -> tuple[Any, Any]:
    """The prompts served eager and compiled back to back per request in this process, in rounds
    until `pairs` pairs (default `Rules.generation_pairs`) or the process's deadline (probes/
    generate.py `replay_paired`: the method), one progress step; `kws`: each side's generate
    kwargs. Returns (compiled, eager) replays."""
    from ...probes import generate as pg
    from ...probes import generate_loop as pl

    one = pl.serve_one if ctx.workload.loop else pg.serve_one

    def serve(request: Any, res: Any, side: str) -> None:
        one(model, request, kws[side], ctx.sync, res, None)

    ctx.sink({"event": "start", "phase": label})
    t0 = time.perf_counter()
    want = RULES.generation_pairs if pairs is None else pairs
    kwargs = ctx.compile_kwargs()
    out = pg.replay_paired(
        ctx.requests, serve, swap, deadline=ctx.deadline, pairs=want, compile_kwargs=kwargs
    )
    ctx.sink({"event": "done", "phase": label, "seconds": time.perf_counter() - t0})
    return out


def replay_side(
    ctx: Any,
    model: Any,
    kw: dict,
    label: str,
    compile_kwargs: dict | None,
    only: set[int] | None = None,
    logits: Any = None,
) -> Any:
    """The prompts (`only`: those requests) served through generate, one progress step; `logits`:
    a StepLogits keeping each step's logits (probes/generate_logits.py)."""
    from ...probes import generate_loop as pl
    from ...probes.generate import replay_generate, serve_one

    ctx.sink({"event": "start", "phase": label})
    t0 = time.perf_counter()
    res = replay_generate(
        model,
        (r for r in ctx.requests() if only is None or r.index in only),
        kw,
        ctx.sync,
        deadline=ctx.deadline,
        compile_kwargs=compile_kwargs or ctx.compile_kwargs(),
        logits=logits,
        serve=pl.serve_one if ctx.workload.loop else serve_one,
    )
    ctx.sink({"event": "done", "phase": label, "seconds": time.perf_counter() - t0})
    return res


def _eager(ctx: Any, spec: ServeSpec, spawn: dict) -> None:
    serve_generation(ctx, "eager")


def _compiled(ctx: Any, spec: ServeSpec, spawn: dict) -> None:
    serve_generation(ctx, "compiled")


PART = Part(
    "generate",
    Where.CHILDREN,
    _plan,
    weight=3.0,
    serves={"generate_eager": _eager, "generate_compiled": _compiled},
    generation=True,
)
