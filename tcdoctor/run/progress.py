"""Progress on stderr while the analysis runs, derived in the parent from the children's phase events.

Method: the launcher polls each child's event file (JSON lines, `run/stream.py`) and feeds the full
list here with the child's name; only events not seen before are shown. A `done` event carries the
phase's own `seconds` and `data`, from which one headline figure is taken: the phase's declaration
says which (`Phase.headline`, with its `label`, in report/phases/; formatted by `units.py`, as the
summary formats it). Strategy children are announced by the launcher
(`strategy 2/4: dynamic=True`, its spec's label), and their figure comes from their `done` event.

Two outputs: on a TTY one line rewritten in place (carriage return), showing the running phase and its
elapsed time plus the last finished phase's figure, cleared at the end; elsewhere (CI logs) one plain
line per finished, failed or skipped phase.

Pitfalls: the data shapes belong to the probes and may evolve, so every figure is read defensively
(a missing one leaves just the elapsed time). Elapsed time of a running phase is measured from when
the parent first saw its start event (up to one poll late). Never imports torch: the parent must not.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import IO, Any, Callable

import click

from .. import units
from ..experiments.specs import PHASE_PREFIX, Spec
from ..report import phases, sections
from ..report.events import ENDS, Event
from ..report.phases.phase import plural

# Events that are no phase of the registry: the target's load (the child's, before any phase).
LOAD_LABEL = "load target"
HIDDEN = ("plan", "cache_artifacts")  # bookkeeping, not a phase the user waits for


def _strategy(d: dict) -> str | None:
    """A strategy row: speed (modes, training ways), compiles (shape strategies) or regions; a tried
    fix: its outcome and speed with it."""
    if d.get("outcome"):
        after = sections.FixSide.from_dict(d.get("after"))
        speed = after.speedup
        return d["outcome"] + (
            f" ({units.ratio(speed, after.speedup_ci)})" if speed is not None else ""
        )
    if d.get("speedup") is not None:
        first = d.get("first_call_s")
        speed = units.ratio(d["speedup"], d.get("speedup_ci"))
        load = f"load {units.seconds(d['load_s'])} + " if d.get("load_s") is not None else ""
        return speed + (f", {load}first call {units.seconds(first)}" if first is not None else "")
    if d.get("compiles") is not None:
        hit = ", recompile limit hit" if d.get("limit_hit") else ""
        return f"{plural(d['compiles'], 'compile')}, {units.seconds(d.get('compile_s'))} compiling{hit}"
    if isinstance(d.get("regions"), list):
        return plural(len(d["regions"]), "region")
    return None


def headline(phase: str, data: Any) -> str | None:
    """The one figure a finished phase is summed up by (its declaration's `Phase.headline`, or a
    strategy row's); None when its data lacks it."""
    if not isinstance(data, dict):
        return None
    declared = phases.BY_NAME.get(phase)
    fn = _strategy if phase.startswith(PHASE_PREFIX) else declared and declared.headline
    try:
        return fn(data) if fn else None
    except (
        TypeError,
        ValueError,
        KeyError,
    ):  # an evolved data shape: fall back to the elapsed time
        return None


class Progress:
    """Fed the children's events; writes progress to stderr (or `file`). Disabled: does nothing."""

    def __init__(
        self,
        enabled: bool = True,
        tty: bool | None = None,
        file: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        width: int | None = None,
    ):
        self.enabled = enabled
        self.file = file
        self.tty = (file or sys.stderr).isatty() if tty is None else tty
        self.clock = clock
        self.width = width
        self._seen: dict[str, int] = {}
        self._started: dict[
            tuple[str, str], tuple[float, int]
        ] = {}  # (clock, feed number) when first seen
        self._feeds = 0
        self._labels: dict[str, str] = {}  # source -> strategy label
        self._labels_seen: dict[tuple[str, str], str] = {}  # (source, phase) -> label at its start
        self._running: tuple[str, float] | None = None
        self._last_done = ""
        self._drawn = 0

    # -- input -----------------------------------------------------------------
    def feed(self, source: str, events: list[Event]) -> None:
        """All events of one child so far (the same list, grown); shows the new ones."""
        if not self.enabled:
            return
        new, self._seen[source] = events[self._seen.get(source, 0) :], len(events)
        self._feeds += 1
        for ev in new:
            self._event(source, ev)

    def new_child(self, source: str) -> None:
        """Another child feeds `source` from its own first event (the timing-only processes, one
        after another under one source): what the previous one showed is forgotten, so its first
        lines are not taken as seen and its phases are timed from their own start."""
        self._seen.pop(source, None)
        for d in (self._started, self._labels_seen):
            for key in [k for k in d if k[0] == source]:
                del d[key]

    def strategy(self, source: str, index: int, total: int, spec: Spec) -> None:
        """The launcher starts strategy child `index` (1-based) of `total`."""
        if not self.enabled:
            return
        label = f"strategy {index}/{total}: {spec.label}"
        self._labels[source] = label
        self._started[(source, "strategy")] = (self.clock(), -1)
        self._running = (label, self.clock())
        self.tick()

    def tick(self) -> None:
        """Redraw the running line (TTY only): its elapsed time moves."""
        if self.enabled and self.tty and self._running:
            label, t0 = self._running
            line = f"tcdoctor: {label} … {units.seconds(self.clock() - t0)}"
            self._draw(line + (f"  | {self._last_done}" if self._last_done else ""))

    def close(self) -> None:
        """Clear the TTY line so the summary starts on a clean line."""
        if self.enabled and self.tty and self._drawn:
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0
        self._running = None

    # -- events ----------------------------------------------------------------
    def _label(self, source: str, phase: str, ev: Event | None = None) -> str:
        if phase.startswith(PHASE_PREFIX):
            if source in self._labels:  # a child of its own, started by the launcher
                return self._labels[source]
            # run in the warm process after its own phases (Spec.shares_process)
            return f"{ev and ev.label or phase} ({source} process)"
        declared = phases.BY_NAME.get(phase)
        label = LOAD_LABEL if phase == "load" else (declared and declared.label) or phase
        return f"{label} ({source} process)" if phase == "load" and source != "cold" else label

    def _event(self, source: str, ev: Event) -> None:
        kind, phase = ev.event, ev.phase or ""
        if not phase or phase in HIDDEN or ev.fatal or (phase == "load" and source in self._labels):
            return  # a fatal error is the CLI's one error line; a strategy child's load is part of its line
        own_child = phase.startswith(PHASE_PREFIX) and source in self._labels
        key = (source, "strategy" if own_child else phase)
        if kind == "start":
            self._labels_seen[key] = self._label(source, phase, ev)
        label = self._labels_seen.get(key) or self._label(source, phase, ev)
        if kind == "start":
            self._started.setdefault(key, (self.clock(), self._feeds))
            self._running = (label, self._started[key][0])
            self.tick()
        elif kind in ENDS:
            self._finished(label, self._outcome(ev, phase, self._elapsed(key, ev)))

    def _elapsed(self, key: tuple[str, str], ev: Event) -> float | None:
        """The phase's own seconds; else (strategies, load) as the parent saw it, if it saw the start separately."""
        started = self._started.get(key)
        if key[1] == "strategy" and started is not None:
            return self.clock() - started[0]  # the whole child, its import and load included
        if ev.seconds is not None:
            return ev.seconds
        return (
            self.clock() - started[0] if started is not None and started[1] < self._feeds else None
        )

    @staticmethod
    def _outcome(ev: Event, phase: str, elapsed: float | None) -> str:
        took = units.seconds(elapsed) if elapsed is not None else ""
        if ev.event == "skipped":
            return f"skipped: {ev.why or 'no reason given'}"
        if ev.event == "failed":
            msg = str(ev.message or "error").splitlines()[0][:100]
            return f"FAILED: {msg}" + (f"  [{took}]" if took else "")
        fig = headline(phase, ev.data)
        return f"{fig}  [{took}]" if fig and took else (fig or took or "done")

    def _finished(self, label: str, outcome: str) -> None:
        self._last_done = f"{label} … {outcome}"
        self._running = None
        if self.tty:
            self._draw(f"tcdoctor: {self._last_done}")
        else:
            self._write(f"tcdoctor: {self._last_done}\n")

    # -- output ----------------------------------------------------------------
    def _draw(self, line: str) -> None:
        width = self.width or shutil.get_terminal_size((100, 20)).columns - 1
        line = line[:width]
        self._write("\r" + line + " " * max(0, self._drawn - len(line)))
        self._drawn = len(line)

    def _write(self, text: str) -> None:
        click.echo(text, nl=False, err=self.file is None, file=self.file)
