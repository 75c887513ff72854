"""A phase's declaration: where it runs, what it measures (by name), what it fills. Torch-free.

A phase is one measurement of an analysis. Its declaration is data the parent reads without
importing torch (`tcdoctor report` re-renders saved JSON, and the launcher never imports torch):
the processes that run it, its position, the report sections it fills and how (`fill`, run in the
parent on the child's result dict, the wire format), the typed record its section is read as, and
`measure`, the "module:function" path of what the child runs, imported only there (by
`run/runner.py`). A declaration lives in a module of this package (`report/phases/NAME.py`) that
defines `PHASES`, a tuple of them; the registry (`report/phases/__init__.py`) finds every such
module, so adding a probe adds no line anywhere else.

The measure function takes the runner (`run.runner.PhaseRunner`, the driver's context) and returns
a JSON-ready dict; it raises `Skip(why)` when it cannot run ("not measured (why)") and
`PhaseError(message, where)` for a failure it has already put in one line.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ..layout import Section

COLD, WARM, IN_PROCESS, TIMING = "cold", "warm", "in_process", "timing"
MAIN = frozenset({COLD, IN_PROCESS})  # the cold child, or the Python API's single process

Fill = Callable[[dict, dict], None]


class Skip(Exception):
    """A phase that cannot run; its message is the 'not measured (why)'."""


class PhaseError(Exception):
    """A failure the measure has already worded: one line and where (a `userframes` where dict)."""

    def __init__(self, message: str, where: dict | None):
        super().__init__(message)
        self.message, self.where = message, where


def plural(count: Any, word: str) -> str:
    """'1 break', '3 breaks': a count and its noun, for a progress headline."""
    return f"{count} {word}" + ("" if count == 1 else "s")


def put(*sections: str) -> Fill:
    """The plain fill: the result is the section (one section), or holds one entry per section."""

    def fill(data: dict, result: dict) -> None:
        for sec in sections:
            data[sec] = result if len(sections) == 1 else result[sec]

    return fill


def not_measured(data: dict, sections: tuple[str, ...], why: str) -> None:
    """The default for a phase that did not finish: each of its sections says why."""
    for sec in sections:
        data[sec].setdefault("not_measured", why)


@dataclasses.dataclass(frozen=True)
class Phase:
    """One measurement: `order` places it among the others (environment 10 … recompiles 130, after
    everything measured on the compiled model, so a hang in the user's variants loses none of it;
    then drift 135, which compiles parts of the model); `fill` defaults to `put(*sections)`;
    `fatal`: its failure ends the process (the eager reference call: nothing can be compared without
    it). What it shows lives here too, and reaches every format: `label`, its name on the progress
    line (the phase's name when empty); `headline(data)`, the one figure the progress line shows
    when it finishes (its `done` event's data; None when the data lacks it); `row(record)`, the
    (label, text) or (label, text, how) line the key-figure table of every format shows for a
    section the `Report` has no field of its own for (`section` reads it typed, as `record`);
    `layout(record)`, that section's own description (report/layout.py: rows, tables, lines),
    drawn by every format; `reads(report)`, what `row` and `layout` are given instead of its
    own section, for a phase that fills part of another's (memory_graphs: `memory.attribution`;
    drift: the whole report, its lines naming a tried fix), None when the report has none of it;
    `not_measured`, how its sections say why it did not finish."""

    name: str
    processes: frozenset[str]
    sections: tuple[
        str, ...
    ]  # report sections it fills ("not measured (why)" when it did not finish)
    measure: str  # "module:function", run in the child with the runner as its one argument
    order: int
    fill: Fill = None  # type: ignore[assignment]  # put(*sections) when not given
    record: type | None = None  # the Record its (first) section is read as
    not_measured: Callable[[dict, tuple[str, ...], str], None] = not_measured
    fatal: bool = False
    row: Callable[[Any], tuple[str, ...] | None] | None = None
    label: str = ""
    headline: Callable[[dict], str | None] | None = None
    layout: Callable[[Any], Section | None] | None = None
    reads: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        if self.fill is None:
            object.__setattr__(self, "fill", put(*self.sections))
