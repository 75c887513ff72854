"""The compile phases: the cold process's first compiled call, and the warm process's.

Cold (`phase_compile`): a fresh copy compiled and its first call measured (`first_call.first_call`:
wall time, compiler phases, cache hits, RSS growth) with Dynamo's logs captured, so the compile's
own graph and break counts (the user's backend, mode, DDPOptimizer; not explain's) and which
compiled region each break ends (`graph_breaks`) come from this very compile; the compile time
frame by frame (`compile_graphs`), the guards (`guards`), and the output snapshot numerics
compares (`outputs`). Then a second fresh copy is compiled for timing, memory and profile: its
wrapper finds the entry the first call made in Dynamo's cache, so nothing is compiled twice.

Warm (`phase_compile_warm`): the same first call in a fresh process against the cold one's inductor
cache (what a restarted server pays), after this process's own copy-fidelity check.

Pitfall: `ctx.compiled` is set only once the phase worked, so a failed compile leaves later phases
skipped ("the compiled model is not available"), never timing a half-made callable.
"""

from __future__ import annotations

import os
import time

from ..report import counts
from ..target.pristine import reset_rng_state
from . import (
    compile_graphs,
    cudagraphs,
    dynamo_state,
    graph_breaks,
    guards,
    isa_probe,
    memory,
    outputs,
)
from .context import PhaseContext
from .first_call import first_call


def phase_compile(ctx: PhaseContext) -> dict:
    """The compile phase (ctx: the run.runner.PhaseRunner): a fresh copy compiled, its first call
    measured with Dynamo's logs captured (which region each break ends, the counts this compile
    makes), the compile time frame by frame, the guards; then the copy timing, memory and profile
    use, which reuses the cache entry just made. `ctx.compiled` is set only once all of it worked."""
    ctx.compiled = None
    if ctx.before_compile:
        ctx.before_compile()
    dynamo_state.fresh()
    subject = ctx.fresh()
    compiled = ctx.torch_compile(subject)
    reset_rng_state()
    began = time.time()  # wall clock, as the cache files' times; before the first call, untimed
    own = subject.workload.call_args  # the copy's own inputs, pristine: a call may change them
    with dynamo_state.dynamo_logs() as logs, cudagraphs.capture() as skips:
        out, data, entries = first_call(
            lambda: ctx.call(compiled, own), ctx.label, ctx.sync, ctx.device
        )
    data["break_sites"] = graph_breaks.break_sites(logs)  # which compiled region each break ends
    # the counts the report shows: this compile's (the user's backend, mode, DDPOptimizer), not explain's
    data["counted"] = graph_breaks.counted(logs)
    if "graph_breaks" in ctx.results:  # the fixes planned here address these findings' ids
        ctx.results["graph_breaks"] = counts.use_compile_counts(
            ctx.results["graph_breaks"], data["counted"]
        )
    ctx.first_call_metrics = entries  # the call's own compile entries (dynamo_state.Window)
    graphs = cudagraphs.summary(
        ctx.options.mode, skips, cudagraphs.metrics_reasons(ctx.first_call_metrics), ctx.device.type
    )
    if graphs is not None:  # captured vs skipped, PyTorch's reasons (reduce-overhead, max-autotune)
        data["cudagraphs"] = graphs
    if ctx.options.backend == "inductor":  # Inductor's one-off CPU probe, read from its files
        folder = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        data["isa_probe"] = isa_probe.measure(folder, began, ctx.first_call_metrics)
        if folder and isa_probe.seeded(folder):  # --isa-probe none: this folder was seeded
            data["isa_probe"]["seeded"] = True
        isa_probe.keep(folder, began)  # the machine's probed folder, when it has none yet
    data["graphs"] = compile_graphs.probe(  # where the compile time goes, frame by frame
        ctx.first_call_metrics,
        data["first_call_s"],
        (ctx.results.get("eager") or {}).get("first_call_s"),
        data["break_sites"],
    )
    # CUDA-graph replays may reuse output buffers; the state is the subject's after its first call
    ctx.compiled_out = outputs.snapshot(
        out, subject.fn, ctx.pristine_fn, (own, ctx.pristine_inputs())
    )
    data["guards"] = guards.count(data["frames"])
    ctx.sequence = (subject, compiled)
    ctx.compiled = ctx.torch_compile(ctx.fresh())  # timed copy; reuses the cache entry just made
    ctx.entries_after_first_call = len(dynamo_state.compilation_metrics())
    return data


def phase_compile_warm(ctx: PhaseContext) -> dict:
    """The warm process's first call against the cold one's inductor cache (ctx: the runner); its
    copies are checked first, as the cold child's are."""
    ctx.compiled = None
    ctx.check_copies()  # this process's copies are checked too, before the compile
    checked = ctx.take_checked()
    dynamo_state.fresh()
    compiled = ctx.torch_compile(ctx.fresh())
    ctx.eager_subject = checked[0] if checked is not None else ctx.fresh()
    reset_rng_state()
    # what this copy holds from before its first call to after the timing's warm-up of it
    # (probes/memory.Held, closed in runtime_warm's warm-up: nothing else runs between)
    ctx.held = memory.Held(ctx.device).start()
    _, data, entries = first_call(lambda: ctx.call(compiled), ctx.label, ctx.sync, ctx.device)
    ctx.compiled = compiled
    return {
        "warm_s": data["first_call_s"],
        # joined with the cold rows by compile id in the parent (report/compile_joins.py)
        "graphs": compile_graphs.table(entries),
        "phases": data["phases"],
        "cache": data["cache"],
        "native_compile_s": data["native_compile_s"],
        "state": ctx.pristine.method,
        "state_check": ctx.pristine.check,
    }
