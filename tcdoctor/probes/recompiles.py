"""Recompiles of the sequence inputs → variant 1 → … → variant n, each with its failing guard.

There is no recompile counter in PyTorch: a CompilationMetrics entry with `recompile_reason`
set is one recompile. When `recompile_limit` is hit Dynamo only logs a warning and runs the
frame eagerly from then on, which is exactly what users never notice.

Two phases, counted once each (disjoint ranges of the metrics buffer): the first call, where a
function compiled as a frame of its own recompiles when it is called again inside that same call
(a helper called from a loop on shrinking tensors, once a break in the loop made Dynamo skip the
caller), and the workload's variants after it. Every event says which (`phase`); `count` is the
total, `first_call_count` the first call's share.
"""

from __future__ import annotations

import linecache
import re
import time
from typing import Any, Callable

import torch

from ..report.phases import Skip
from ..report.sections.breaks import Recompile
from ..target.userframes import is_user_file
from ..target.workload import CallArgs, is_state_change
from . import dynamo_state
from .calls import iter_tensors
from .context import PhaseContext
from .first_call import function_name

_LIMIT = re.compile(r"recompile_limit|cache_size_limit")
_LIMIT_FAIL = re.compile(r"recompile limit|recompile_limit|cache_size_limit|cache size limit", re.I)
FIRST_CALL, VARIANTS = "first call", "variants"


def limit_warnings(warnings: list[str]) -> list[str]:
    """Dynamo's warnings that the recompile limit was hit (older releases call it cache_size_limit)."""
    return [w for w in warnings if _LIMIT.search(w)]


def _describe_value(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return f"Tensor[{','.join(map(str, x.shape))}] {str(x.dtype).replace('torch.', '')}"
    if isinstance(x, (int, float, bool, str)) or x is None:
        return repr(x)
    n = sum(1 for _ in iter_tensors(x))
    return f"{type(x).__name__}({n} tensors)" if n else type(x).__name__


def describe_call(ca: CallArgs) -> str:
    """'(Tensor[2,16] int64, attention_mask=Tensor[2,16] int64)'."""
    parts = [_describe_value(x) for x in ca.args] + [
        f"{k}={_describe_value(v)}" for k, v in ca.kwargs.items()
    ]
    return "(" + ", ".join(parts) + ")"


def _lambda_source(fn: Any) -> str | None:
    """The text of one lambda, even when several share a line (uses 3.11 column positions)."""
    code = getattr(fn, "__code__", None)
    if code is None or fn.__name__ != "<lambda>":
        return None
    pos = [
        p
        for p in code.co_positions()
        if p[0] == code.co_firstlineno and p[2] is not None and p[3] is not None and p[3] > p[2]
    ]
    line = linecache.getline(code.co_filename, code.co_firstlineno)
    if not pos or not line:
        return None
    start = line.rfind("lambda", 0, min(p[2] for p in pos))
    return line[start : max(p[3] for p in pos)] if start >= 0 else None


def describe_variant(index: int, variant: Any, workload: Any) -> str:
    if is_state_change(variant):
        src = (
            _lambda_source(variant)
            or f"{getattr(variant, '__name__', type(variant).__name__)}(model)"
        )
        return f"variant {index}: {src}, then inputs"
    return f"variant {index}: {describe_call(workload.variant_args(variant))}"


def plain_reason(reason: str) -> str:
    """'0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8' → the failing guards, in words.

    Dynamo appends the guard's source comment and a user stack; only the guard lines stay.
    """
    out = []
    for ln in str(reason).splitlines():
        m = re.match(r"\s*-?\s*\d+/\d+:\s*(.*)", ln)
        if not m:
            continue
        text = m.group(1).split("  #")[0].strip().replace(". expected", ": expected")
        if text and text not in out:
            out.append(text)
    return "; ".join(out) or str(reason).strip().splitlines()[0]


def _user_location(metric: Any) -> dict:
    """{"file", "line"} of the recompiled function when it is the user's own (for annotations)."""
    filename = getattr(metric, "co_filename", None) or ""
    if not is_user_file(filename):
        return {}
    return {"file": filename, "line": getattr(metric, "co_firstlineno", None)}


def _event(
    m: Any, label: str, variant: str, index: int, wall: float | None, phase: str
) -> Recompile:
    """One recompile as the report's record, built here once (report/encoding.py writes it)."""
    reason = getattr(m, "recompile_reason", None)
    return Recompile(
        function=function_name(m, label),
        reason=plain_reason(reason),
        raw_reason=str(reason),
        variant=variant,
        variant_index=index,
        phase=phase,
        compile_s=getattr(m, "entire_frame_compile_time_s", None),
        call_wall_s=wall,
        fail_type=getattr(m, "fail_type", None),
        **_user_location(m),
    )


def first_call_events(metrics: list, label: str, inputs: str) -> list[Recompile]:
    """The recompiles inside the first call: its CompilationMetrics entries with recompile_reason.

    `metrics` are exactly the first call's entries (from a fresh Dynamo state); `inputs` describes
    its arguments. Frame ids restart at a fresh state, so these never overlap the variants' entries."""
    return [
        _event(m, label, f"the first call {inputs}", 0, None, FIRST_CALL)
        for m in metrics
        if getattr(m, "recompile_reason", None)
    ]


def _limit_failures(metrics: list) -> list[str]:
    """Entries Dynamo gave up on at the recompile limit (the frame runs eagerly from then on)."""
    out = []
    for m in metrics:
        reason = str(getattr(m, "fail_reason", None) or "")
        if getattr(m, "recompile_reason", None) and _LIMIT_FAIL.search(reason):
            out.append(f"{function_name(m, '?')}: {reason.strip().splitlines()[0]}")
    return out


def run(
    compiled: Any,
    model: Any,
    label: str,
    workload: Any,
    call: Callable[[Any, CallArgs], Any],
    first_call: list | None = None,
) -> dict:
    """Feed each variant once, in order, after the already-made first call with `inputs`.

    `first_call`: the CompilationMetrics entries of that first call (None: not known, and the
    first call's own recompiles are left out, as `first_call_count` None says)."""
    first = first_call_events(first_call or [], label, describe_call(workload.call_args))
    events: list[Recompile] = []
    errors: list[dict] = []
    whole = dynamo_state.Mark()
    t0 = time.perf_counter()
    with dynamo_state.dynamo_logs() as logs:
        for i, variant in enumerate(workload.variants, start=1):
            vlabel = describe_variant(i, variant, workload)
            mark = dynamo_state.Mark()
            tv = time.perf_counter()
            try:
                if is_state_change(variant):
                    variant(model)
                    call(compiled, workload.call_args)
                else:
                    call(compiled, workload.variant_args(variant))
            except Exception as exc:  # noqa: BLE001 - a failing variant is a finding, not a crash
                errors.append(
                    {
                        "variant": vlabel,
                        "message": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                    }
                )
            wall = time.perf_counter() - tv
            for m in mark.since():
                if getattr(m, "recompile_reason", None):
                    events.append(_event(m, label, vlabel, i, wall, VARIANTS))
        warnings = dynamo_state.warnings(logs)
    ms = whole.since()
    limit_msgs = _limit_failures(first_call or []) + limit_warnings(warnings)
    compile_s = sum(
        getattr(m, "entire_frame_compile_time_s", 0) or 0
        for m in ms
        if getattr(m, "recompile_reason", None)
    )
    limit = getattr(torch._dynamo.config, "recompile_limit", None) or getattr(
        torch._dynamo.config, "cache_size_limit", None
    )
    return {
        "count": len(first) + len(events),
        "first_call_count": len(first) if first_call is not None else None,
        "events": first + events,
        "limit": limit,
        "limit_hit": bool(limit_msgs),
        "limit_messages": [w.splitlines()[0] for w in limit_msgs][:5],
        "variants": len(workload.variants),
        "variant_errors": errors,
        "recompile_time_s": compile_s,
        "sequence_wall_s": time.perf_counter() - t0,
        "source": (
            "CompilationMetrics entries with recompile_reason: during the first call with the inputs "
            "(phase 'first call'), then during each variant once (phase 'variants')"
        ),
    }


FRESH_SEQUENCE = (
    "continues from the compile phase's first call on a pristine copy, as a fresh process would"
)
SEQUENCE_AGAIN = (
    "a pristine copy's first call made again in a fresh Dynamo state (a later phase had reset Dynamo "
    "or compiled entries of its own: guards on object identity), then the variants, as a fresh process would"
)


def phase_recompiles(ctx: PhaseContext) -> dict:
    """The recompiles phase (ctx: the run.runner.PhaseRunner): the variants, fed in order to the
    copy whose first call the compile phase made; started again from a fresh copy's first call only
    when a later phase reset Dynamo or compiled entries of its own."""
    from ..target.pristine import reset_rng_state

    if ctx.sequence is None:
        raise Skip("the compiled model is not available (compile phase did not finish)")
    state = FRESH_SEQUENCE
    if ctx.dynamo_reset or len(dynamo_state.compilation_metrics()) != ctx.entries_after_first_call:
        dynamo_state.fresh()
        subject = ctx.fresh()
        compiled = ctx.torch_compile(subject)
        reset_rng_state()
        window = dynamo_state.Window()
        ctx.call(compiled)
        ctx.first_call_metrics = window.entries()
        ctx.sequence = (subject, compiled)
        state = SEQUENCE_AGAIN
    subject, compiled = ctx.sequence
    data = run(  # the first call's own recompiles too (phase "first call")
        compiled,
        subject.workload.model,
        ctx.label,
        subject.workload,
        ctx.call,
        ctx.first_call_metrics,
    )
    data["state"] = state
    row = ctx.automatic_row(subject, compiled, data)  # strategies.main_is_automatic
    if row is not None:
        data["automatic_row"] = row
    return data
