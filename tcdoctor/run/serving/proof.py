"""The `proof` part: in a fresh process started from a COPY of the replay's cache folder (a
restarted server), the restart's figures (probes/restart.py), then the warm-up, then the traffic
under `set_stance("fail_on_recompile")` (probes/warmup.py: the method and its pitfalls).

Torch-free at import: the parent imports it; `part_proof` runs in the part's own process.
"""

from __future__ import annotations

from typing import Any

from ...report.events import Event
from ..spec import ServeSpec
from ..stages import Where
from .part import Part, Serving
from .replay import derived, warmup_requests
from .section import ProofPart, typed

COPY_OF_REPLAY = "a copy of the replay process's cache folder"


def _plan(run: Serving) -> None:
    data = run.go(PART, run.share(PART), warmup=warmup_requests(run))
    run.results["proof"] = typed(data, ProofPart)


def part_proof(serve: Any, indices: list[int], spawn: dict) -> None:
    """The `proof` part: the restart's figures over the warm-up, then the proof's replay (each
    piece put as it is measured)."""
    import torch

    from ...probes import dynamo_state, restart
    from ...probes.warmup import proof_record, rejected_by_eager, serve_warmup, user_warmup

    dynamo_state.fresh()
    n = len(user_warmup(serve)) + len(indices)
    label = f"serving: warm-up ({n} requests, a copy of the replay's cache)"
    serve.sink(Event(event="start", phase=label))
    with restart.cache_watch() as watch:
        compiled = serve.compile(serve.fresh().model)
        seconds, first = serve_warmup(serve, compiled, indices)
    serve.sink(Event(event="done", phase=label, seconds=seconds))
    serve.put("warmup_s", seconds)
    serve.put("restart", restart.restart_record(spawn, watch, first, serve.options.backend))
    torch.compiler.set_stance("fail_on_recompile")
    try:
        proof = serve.replay(
            compiled, f"serving: proof: {serve.n} requests under set_stance('fail_on_recompile')"
        )
    finally:
        torch.compiler.set_stance("default")
    would = {e["request"] for e in proof.errors if "Detected recompile" in e["message"]}
    serve.put("proof", proof_record(proof, rejected_by_eager(serve, would)))


def _serve(ctx: Any, spec: ServeSpec, spawn: dict) -> None:
    part_proof(ctx, spec.warmup or [], spawn)


PART = Part(
    "proof",
    Where.CHILDREN,
    _plan,
    needs=("replay",),
    when=derived,
    weight=2.0,
    copy_of="replay",
    copied=COPY_OF_REPLAY,
    serves={"proof": _serve},
)
