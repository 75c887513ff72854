"""One line of a child's event stream (run/stream.py), typed.

A child says what it does one record at a time: a phase started, finished with its data, failed with
its error, was skipped and why, an experiment was not tried, a serving part's result, the end. The
child builds an `Event` and the one serialiser (report/encoding.py) writes it as a JSON line; the
parent reads each line back as an `Event` once, where it arrives (`read_events`, `ListSink`), and
reads fields by attribute from then on. A dict still arriving (an emitter that writes dicts) is
typed by `Event.of`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .record import Record

# what ends a phase that started (process.last_started, the progress lines)
ENDS = ("done", "failed", "skipped")


@dataclass
class Event(Record):
    """`event`: the kind ('start', 'done', 'failed', 'skipped', 'not_tried', 'result', 'end').
    `data`: a finished phase's result (a serving part's for 'result', under `key`); `error`: a
    failure's {message, where}; `fatal`: the failure ends the process (with `exit_code`); `spec`:
    the experiment's spec (a failed or untried one); `ok`/`skipped`: how the process ended."""

    event: str = ""
    phase: str | None = None
    label: str | None = None
    key: str | None = None
    t: float | None = None
    seconds: float | None = None
    why: str | None = None
    error: dict | None = None
    fatal: bool | None = None
    exit_code: int | None = None
    spec: dict | None = None
    ok: bool | None = None
    skipped: bool | None = None
    data: Any = None

    @classmethod
    def of(cls, value: Event | dict) -> Event:
        """`value` typed: itself when it is one already, else read from its dict."""
        return value if isinstance(value, cls) else cls.from_dict(value)

    @property
    def message(self) -> str | None:
        """A failure's message (None for any other kind)."""
        return (self.error or {}).get("message")

    @property
    def where(self) -> dict | None:
        """Where in the user's code a failure stood ({file, line, ...}), or None."""
        return (self.error or {}).get("where")

    def is_done(self, phase: str) -> bool:
        return self.event == "done" and self.phase == phase


# every field but the kind is written only when set: a line holds what its kind says
Event.OMIT_NONE = tuple(f.name for f in fields(Event) if f.name not in ("event", "extra"))
