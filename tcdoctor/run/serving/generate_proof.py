"""The `generate_proof` part (issue 60): the warm-up for generation, derived and proven.

Derived (`derive`, in the parent): the requests whose generation compiled on the compiled side's
cold replay (each compile carries its request), in traffic order: serving those prompts, with the
same max_new_tokens, runs every prefill length and decode step that compiled. It is the smallest
set of requests that triggered every compile of that replay (a request that compiled nothing adds
nothing); it is not claimed minimal in prompts of any other traffic.

Proven (`part_proof`, in a fresh process started from a COPY of the compiled process's cache
folder: a restarted server): the forward compiled as the generate part compiles it, the warm-up's
prompts served (timed: `warmup_s`), then every prompt under `torch.compiler.set_stance(
"fail_on_recompile")`: a request that would compile raises (PyTorch's "Detected recompile" with
its guard) and is named. Proven when every prompt was served and none would have compiled.

Torch-free at import: the parent imports it.
"""

from __future__ import annotations

import time
from typing import Any

from ..spec import ServeSpec
from ..stages import Where
from .generate import compile_forward, generate_kwargs, generated, replay_side
from .part import Part, Serving

NOTHING_COMPILED = "the compiled side compiled nothing: no warm-up is needed"
NO_COMPILED = "the generate part's compiled side did not finish: no warm-up was derived"
COPY = "a copy of the compiled generate process's cache folder"


def derive(run: Serving) -> list[int] | None:
    """The warm-up's requests (None: the compiled side did not finish)."""
    compiled = generated(run).compiled
    if compiled is None or compiled.side is None:
        return None
    return sorted({c.request for c in compiled.side.compiles if c.kind in ("compile", "recompile")})


def _when(run: Serving) -> str | None:
    found = derive(run)
    if found is None:
        return NO_COMPILED
    return None if found else NOTHING_COMPILED


def _plan(run: Serving) -> None:
    warmup = derive(run) or []
    data = run.go(PART, run.share(PART), warmup=warmup)
    run.results["generate_proof"] = (data or {}).get("proof")


def part_proof(ctx: Any, indices: list[int]) -> dict:
    """The warm-up served, then every prompt under fail_on_recompile (the module's docstring)."""
    import torch

    from ...probes import dynamo_state

    dynamo_state.fresh()
    model = ctx.fresh().model
    ctx.call(model, ctx.workload.call_args)  # the runtime's lazy start, untimed, eager
    kw = generate_kwargs(ctx, "compiled")
    compile_kwargs = compile_forward(ctx, model)
    wanted = set(indices)
    t0 = time.perf_counter()
    warm = replay_side(
        ctx, model, kw, f"generation: warm-up ({len(wanted)} prompts)", compile_kwargs,
        only=wanted,
    )  # fmt: skip
    warmup_s = time.perf_counter() - t0
    torch.compiler.set_stance("fail_on_recompile")
    try:
        proof = replay_side(
            ctx, model, kw, "generation: proof under fail_on_recompile", compile_kwargs
        )
    finally:
        torch.compiler.set_stance("default")
    would = [
        {"request": e["request"], "shapes": e.get("shapes"), "step": e.get("step"),
         "message": e["message"]}
        for e in proof.errors if "Detected recompile" in e["message"]
    ]  # fmt: skip
    served = sum(1 for t in proof.total_s if t is not None)
    return {
        "requests": sorted(wanted),
        "warmup_s": warmup_s,
        "warmup_compiles": sum(1 for c in warm.compiles if c["kind"] in ("compile", "recompile")),
        "proven": not would and not proof.errors and not proof.stopped and served == ctx.n,
        "would_compile": would,
        "served": served,
        "errors": [e for e in proof.errors if e["request"] not in {w["request"] for w in would}],
        "stopped": proof.stopped,
        "method": "a fresh process from a copy of the compiled process's cache folder: the "
        "warm-up's prompts served, then every prompt under "
        "torch.compiler.set_stance('fail_on_recompile')",
    }


def _serve(ctx: Any, spec: ServeSpec, spawn: dict) -> None:
    ctx.put("proof", part_proof(ctx, spec.warmup or []))


PART = Part(
    "generate_proof",
    Where.CHILDREN,
    _plan,
    needs=("generate",),
    when=_when,
    weight=2.0,
    copy_of="generate",
    copied=COPY,
    serves={"generate_proof": _serve},
    generation=True,
)
