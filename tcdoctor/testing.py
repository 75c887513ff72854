"""`assert_compiles`: a unit-test assertion that a model compiles without graph breaks or recompiles.

    from tcdoctor.testing import assert_compiles

    def test_model_compiles():
        assert_compiles(MyModel(), torch.randn(4, 16), variants=[(torch.randn(8, 16),)])

Method: in this process, from PyTorch's own records, with no timing and no child process.
`torch.compile(model, backend=backend)` is called on the inputs, then on each variant in order,
as tcdoctor.Workload feeds them (a tuple of new positional inputs, keyword arguments kept; a dict of
new keyword arguments, positional inputs kept; a callable that takes the model and changes it,
after which the inputs are fed again). Graph breaks are the records of Dynamo's graph-break log
during all of those calls, read by probes/graph_breaks.py into the user's own file:line, the
reason and PyTorch's hint; a break logged again when a recompile traces the same code is the same
break (one finding with an occurrence count), so the count is of distinct breaks. Recompiles are
the CompilationMetrics entries with `recompile_reason` during the first call (a frame that
recompiles inside one call, e.g. a helper a loop calls on shrinking tensors) and while the variants
are fed (probes/recompiles.py), each with its failing guard: the count PyTorch records for the same
calls, as `tcdoctor analyze` counts them.

State: Dynamo's caches are reset before the first call (a frame compiled earlier in the process
would be reused and log nothing) and after the last, as `torch._dynamo.reset()` does, so code the
caller compiled before recompiles on its next call; `counters`, the compilation-metrics buffer and
its limit, and torch's logging settings are put back as they were found.

Pitfalls: calls run in the caller's grad mode (no `torch.no_grad()` of tcdoctor's, unlike
`tcdoctor analyze`); an exception from the first call propagates as it is, after the state is
restored; a variant that raises fails the assertion. Steps Dynamo filed only under
`counters["unimplemented"]` with no graph-break record (code after them ran eagerly) are named in
the failure message but not counted, as in tcdoctor's report.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import os
from typing import TYPE_CHECKING, Any, Iterator, Sequence

if TYPE_CHECKING:
    from .report.sections.breaks import Recompile

GRAPH_BREAK_LOGGER = "torch._dynamo.symbolic_convert.__graph_breaks"


@dataclasses.dataclass
class CompileRecord:
    """What one `assert_compiles` saw: graph breaks (probes/graph_breaks.py findings), recompiles
    (probes/recompiles.py events), steps run eagerly without a break record, variant errors."""

    graph_breaks: list[dict]
    recompiles: list[Recompile]
    unlogged_fallbacks: list[dict]
    variant_errors: list[dict]
    recompile_limit_hit: bool


def assert_compiles(
    model: Any,
    *inputs: Any,
    kwargs: dict | None = None,
    variants: Sequence[Any] = (),
    max_graph_breaks: int | None = None,
    max_recompiles: int = 0,
    backend: Any = "eager",
    compile_kwargs: dict | None = None,
    known_breaks: str | os.PathLike | None = None,
    allow_stale: bool = False,
    update_known_breaks: bool = False,
) -> CompileRecord:
    """Compile `model` with `torch.compile(model, backend=backend, **compile_kwargs)`, call it on
    `inputs` (and `kwargs`), then on each variant; raise AssertionError naming each graph break
    (file:line, reason, PyTorch's hint) and each recompile (the failing guard) when there are more
    than allowed, or when a variant raised. Returns what it saw.

    `max_graph_breaks` defaults to 0, or to no limit when `known_breaks` is given: the graph breaks
    are then judged against that file (checks/known_breaks.py: a break not listed, or more times,
    fails; a listed one that no longer occurs fails unless `allow_stale`). `update_known_breaks`
    rewrites the file from this run first (reasons kept, new entries with a placeholder reason)."""
    __tracebackhide__ = True  # pytest shows the test's line, not this function's
    if known_breaks is None and (allow_stale or update_known_breaks):
        raise ValueError("allow_stale and update_known_breaks need known_breaks")
    import torch

    from .probes import dynamo_state, recompiles
    from .target.workload import Workload

    workload = Workload(
        model,
        inputs,
        variants=variants,
        kwargs=kwargs or {},
        compile_kwargs=compile_kwargs or {},
    )
    label = getattr(model, "__name__", None) or type(model).__name__
    with _dynamo_state_kept(), _records_of(GRAPH_BREAK_LOGGER) as breaks_log:
        dynamo_state.fresh()
        compiled = torch.compile(model, backend=backend, **workload.compile_kwargs)
        window = dynamo_state.Window()
        with dynamo_state.dynamo_logs():
            workload.call_args.apply(compiled)
        first_call = window.entries()  # its own recompiles count too
        sequence = recompiles.run(
            compiled, model, label, workload, lambda fn, ca: ca.apply(fn), first_call
        )
        unimplemented = dynamo_state.counters_of("unimplemented")
    record = _record(breaks_log, unimplemented, sequence)
    if max_graph_breaks is None:
        max_graph_breaks = 0 if known_breaks is None else len(record.graph_breaks)
    failures = _failures(record, max_graph_breaks, max_recompiles)
    known = None
    if known_breaks is not None:
        known = _known(record, os.fspath(known_breaks), update_known_breaks)
        if known.failed(allow_stale):
            failures.append(f"graph breaks against known breaks: {known.summary(allow_stale)}")
    if failures:
        raise AssertionError(_message(label, backend, record, failures, known, allow_stale))
    return record


def _known(record: CompileRecord, path: str, update: bool) -> Any:
    """The run's breaks against the known-breaks file (rewritten from them first with `update`)."""
    from .checks import known_breaks as kb

    if update:
        entries = kb.load(path) if os.path.exists(path) else []
        kb.write(path, kb.updated(entries, record.graph_breaks, path))
    return kb.compare(kb.load(path), record.graph_breaks, path)


def _record(breaks_log: Any, unimplemented: dict, sequence: dict) -> CompileRecord:
    from .probes import dynamo_state, graph_breaks

    records = dynamo_state.graph_break_records(breaks_log)
    findings = graph_breaks.findings_from_messages([m for m, _ in records], [f for _, f in records])
    return CompileRecord(
        graph_breaks=findings,
        recompiles=sequence["events"],
        unlogged_fallbacks=graph_breaks.unlogged_unimplemented(unimplemented, findings),
        variant_errors=sequence["variant_errors"],
        recompile_limit_hit=sequence["limit_hit"],
    )


def _failures(record: CompileRecord, max_graph_breaks: int, max_recompiles: int) -> list[str]:
    out = []
    if len(record.graph_breaks) > max_graph_breaks:
        out.append(
            f"{_count(len(record.graph_breaks), 'graph break')} (at most {max_graph_breaks})"
        )
    if len(record.recompiles) > max_recompiles:
        out.append(f"{_count(len(record.recompiles), 'recompile')} (at most {max_recompiles})")
    if record.variant_errors:
        out.append(f"{_count(len(record.variant_errors), 'variant')} raised")
    return out


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _where(file: str | None, line: int | None) -> str:
    """file:line, relative to the working directory when the file is under it (as pytest shows)."""
    if not file:
        return "?"
    rel = os.path.relpath(file) if os.path.isabs(file) else file
    shown = file if rel.startswith("..") else rel
    return f"{shown}:{line}" if line else shown


def _break_lines(f: dict) -> list[str]:
    times = f" ({f['occurrences']} times)" if f["occurrences"] > 1 else ""
    code = f": {f['code'].strip()}" if f.get("code") else ""
    lines = [
        f"graph break at {_where(f['file'], f['line'])} in {f.get('function') or '?'}{code}{times}",
        f"    reason: {f['reason']}" + (f" [{f['gb_id']}]" if f.get("gb_id") else ""),
    ]
    if f.get("origin") not in (None, "user"):
        lines.append(f"    in: {f['origin_text']}")
    lines += [f"    hint: {h}" for h in f.get("hints") or []]
    if f.get("doc_url"):
        lines.append(f"    see: {f['doc_url']}")
    return lines


def _message(
    label: str,
    backend: Any,
    record: CompileRecord,
    failures: list[str],
    known: Any = None,
    allow_stale: bool = False,
) -> str:
    lines = [f"torch.compile({label}, backend={backend!r}): " + ", ".join(failures)]
    if known is not None:  # the new and stale ones first, then every break as below
        lines += known.lines(allow_stale)
    for f in record.graph_breaks:
        lines += _break_lines(f)
    for r in record.recompiles:
        lines.append(f"recompile of {r.function} on {r.variant}")
        lines.append(f"    failing guard: {r.reason}")
    if record.recompile_limit_hit:
        lines.append("the recompile limit was hit: Dynamo runs that frame eagerly from then on")
    for e in record.variant_errors:
        lines.append(f"{e['variant']} raised {e['message']}")
    for u in record.unlogged_fallbacks:
        lines.append(f"ran eagerly without a graph-break record (not counted): {u['reason']}")
    return "\n".join(lines)


@contextlib.contextmanager
def _records_of(logger_name: str) -> Iterator[Any]:
    """Collect the records of one of torch's artifact loggers while enabled (probes/dynamo_state's
    collector, attached to the artifact logger itself so that nested `dynamo_logs` do not mute it)."""
    from .probes.dynamo_state import _Collector

    collector = _Collector()
    logger = logging.getLogger(logger_name)
    logger.addHandler(collector)
    try:
        yield collector
    finally:
        logger.removeHandler(collector)


@contextlib.contextmanager
def _dynamo_state_kept() -> Iterator[None]:
    """Put back, afterwards, what the assertion changes in Dynamo's process-wide state: counters
    (the same Counter objects, their contents), the compilation-metrics buffer and its limit,
    torch's logging settings; and clear Dynamo's caches, as `torch._dynamo.reset()` does."""
    import torch._dynamo
    from torch._dynamo import utils as dutils

    counters = {k: (c, dict(c)) for k, c in dutils.counters.items()}
    buffer = getattr(dutils, "_compilation_metrics", None)  # private: the deque behind the getter
    metrics = list(buffer) if buffer is not None else None
    limit = getattr(buffer, "maxlen", None)
    logs = _log_settings()
    try:
        yield
    finally:
        torch._dynamo.reset()
        dutils.counters.clear()
        for key, (counter, values) in counters.items():
            counter.clear()
            counter.update(values)
            dutils.counters[key] = counter
        if metrics is not None:
            if limit is not None:
                dutils.set_compilation_metrics_limit(limit)
            dutils.clear_compilation_metrics()
            dutils._compilation_metrics.extend(metrics)
        _restore_log_settings(logs)


def _log_settings() -> Any:
    """torch's logging state (levels and artifacts set by set_logs or TORCH_LOGS); None where the
    private API is missing."""
    try:
        from torch._logging import _internal

        return copy.deepcopy(_internal.log_state)
    except Exception:  # noqa: BLE001 - private API
        return None


def _restore_log_settings(saved: Any) -> None:
    if saved is None:
        return
    try:
        from torch._logging import _internal

        state = _internal.log_state
        state.clear()
        state.log_qname_to_level.update(saved.log_qname_to_level)
        state.artifact_names.update(saved.artifact_names)
        _internal._init_logs()
    except Exception:  # noqa: BLE001 - private API; probes/dynamo_state has reset them to default
        pass
