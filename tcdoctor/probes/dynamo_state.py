"""Fresh Dynamo state between phases, and capture of Dynamo's own diagnostic logs.

`torch._dynamo.reset()` clears cache entries but not `counters` nor the compilation
metrics buffer, so all three are cleared here; the metrics buffer keeps only 64 entries
unless its limit is raised first.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Iterator

import torch
import torch._dynamo
from torch._dynamo import utils as dutils

METRICS_LIMIT = 100_000


def fresh() -> None:
    torch._dynamo.reset()
    dutils.counters.clear()
    clear = getattr(dutils, "clear_compilation_metrics", None)
    if clear:
        clear()
    limit = getattr(dutils, "set_compilation_metrics_limit", None)
    if limit:
        limit(METRICS_LIMIT)


def compilation_metrics() -> list:
    """This process's compile entries (CompilationMetrics), in the order PyTorch recorded them.

    Pitfall: PyTorch's list also holds *runtime* entries (`is_runtime=True`, no compile id). Time
    that Inductor spends in a compile column outside any Dynamo compile (an AOTInductor build, an
    export lowered by Inductor) accumulates in the thread's runtime metrics context, and is
    recorded as one entry only at the next compiled graph's first run, started when those seconds
    began. Such an entry is no compile of the call it lands in: an earlier test's AOTInductor
    build (16.8 s of Inductor lowering) was counted into a BERT step's first call of 20.9 s. Every
    count and phase reads compiles, so only compile entries are returned.
    """
    return [m for m in _recorded() if not getattr(m, "is_runtime", False)]


def _recorded() -> list:
    """PyTorch's metrics buffer as it stands, runtime entries included (empty where the private
    API is gone)."""
    get = getattr(dutils, "get_compilation_metrics", None)
    return list(get()) if get else []


class Mark:
    """A place in PyTorch's compile-metrics buffer: `since()` gives the compile entries recorded
    after it.

    Told by the identity of the last entry at the mark, never by the buffer's length: the buffer
    is a bounded deque (64 entries unless `fresh()` raised the limit), so once it is full its length
    stops growing and a length slice reads nothing new (a long in-process run met this). When the
    marked entry has left the buffer, everything in it is newer; `overflowed` then says entries may
    have been dropped before they were read."""

    def __init__(self) -> None:
        recorded = _recorded()
        self._last = recorded[-1] if recorded else None
        self.overflowed = False

    def since(self) -> list:
        """The compile entries recorded after the mark."""
        return self._read()[0]

    def take(self) -> list:
        """The compile entries recorded after the mark, the mark moved past them: each entry is
        taken once (a streamer attributing compiles to the step that follows them)."""
        new, self._last = self._read()
        return new

    def _read(self) -> tuple[list, object]:
        recorded = _recorded()
        at = next((i for i in range(len(recorded) - 1, -1, -1) if recorded[i] is self._last), None)
        if at is None and self._last is not None:
            self.overflowed = True  # the marked entry was pushed out: all are newer, some lost
        new = recorded[at + 1 :] if at is not None else recorded
        last = recorded[-1] if recorded else self._last
        return [m for m in new if not getattr(m, "is_runtime", False)], last


class Window:
    """The compile entries one stretch of this thread's work made: recorded after the window
    opened (`Mark`), and begun after it opened (`start_time_us`).

    An entry recorded inside the window but begun before it is another thread's compile that was
    under way when the window opened (each thread has its own metrics context; this thread was not
    compiling): its seconds are no part of this thread's call. `left_out` keeps those entries."""

    def __init__(self) -> None:
        self.mark = Mark()
        self.start_us = time.time_ns() // 1000
        self.left_out: list = []

    def entries(self) -> list:
        recorded = self.mark.since()
        self.left_out = [m for m in recorded if self._began_before(m)]
        return [m for m in recorded if not self._began_before(m)]

    def _began_before(self, m: object) -> bool:
        began = getattr(m, "start_time_us", None)
        return began is not None and began < self.start_us


def counters_of(group: str) -> dict:
    return dict(dutils.counters.get(group, {}))


def counter(group: str, key: str) -> int:
    return int(dutils.counters.get(group, {}).get(key, 0))


def optimize_ddp_mode() -> str | None:
    """Dynamo's DDP mode ('ddp_optimizer' splits graphs at DDP's buckets); None where unknown."""
    try:
        return str(dutils.get_optimize_ddp_mode())
    except Exception:  # noqa: BLE001 - private API
        return None


def _tracer_frames() -> list[tuple[str, int, str]]:
    """The frames Dynamo is tracing right now, outermost first: (file, line, function).

    A break inside a library function that Dynamo traces as a frame of its own has a user
    traceback with only library frames; the translator's parent chain still holds the user's
    line that called into it. Private API: an empty list when it is not there.
    """
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        tx = InstructionTranslator.current_tx()
    except Exception:  # noqa: BLE001
        return []
    frames = []
    while tx is not None and len(frames) < 64:
        code = getattr(tx, "f_code", None)
        if code is not None:
            frames.append(
                (
                    code.co_filename,
                    int(getattr(tx, "lineno", 0) or code.co_firstlineno),
                    code.co_name,
                )
            )
        tx = getattr(tx, "parent", None)
    return frames[::-1]


def _compile_id() -> str | None:
    try:
        from torch._guards import CompileContext

        cid = CompileContext.current_compile_id()
        return str(cid) if cid is not None else None
    except Exception:  # noqa: BLE001 - private API
        return None


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, int, str]] = []
        self.tracer_frames: dict[
            int, list
        ] = {}  # record index -> frames being traced when it was logged
        self.compile_ids: dict[int, str] = {}  # record index -> the compile id Dynamo was compiling

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if record.name.endswith("__graph_breaks"):
                self.tracer_frames[len(self.records)] = _tracer_frames()
                self.compile_ids[len(self.records)] = _compile_id()
            self.records.append((record.name, record.levelno, record.getMessage()))
        except Exception:  # noqa: BLE001 - a bad log record must not break the analysis
            pass


def _drop_all(_record: logging.LogRecord) -> bool:
    return False


@contextlib.contextmanager
def dynamo_logs() -> Iterator[_Collector]:
    """Collect graph-break, recompile and warning records from logger `torch._dynamo`.

    `set_logs` turns propagation off on `torch._dynamo`, so the handler goes there;
    torch's own stderr handlers are muted meanwhile to keep the user's terminal clean.
    """
    collector = _Collector()
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    logger = logging.getLogger("torch._dynamo")
    muted = [h for h in logger.handlers]
    for h in muted:
        h.addFilter(_drop_all)
    logger.addHandler(collector)
    try:
        yield collector
    finally:
        logger.removeHandler(collector)
        for h in muted:
            h.removeFilter(_drop_all)
        torch._logging.set_logs()


def graph_break_messages(collector: _Collector) -> list[str]:
    return [m for name, _, m in collector.records if name.endswith("__graph_breaks")]


def graph_break_records(collector: _Collector) -> list[tuple[str, list]]:
    """(message, frames being traced when it was logged) for each graph-break record."""
    return [
        (m, collector.tracer_frames.get(i, []))
        for i, (name, _, m) in enumerate(collector.records)
        if name.endswith("__graph_breaks")
    ]


def warnings(collector: _Collector) -> list[str]:
    return [m for _, lvl, m in collector.records if lvl >= logging.WARNING]
