"""Phase events as JSON lines, flushed and fsynced one by one so a killed child loses nothing finished."""

from __future__ import annotations

import json
import os

from ..report.encoding import as_sent, dumps
from ..report.events import Event


class FileSink:
    def __init__(self, path: str):
        self.path = path

    def __call__(self, event: Event | dict) -> None:
        line = dumps(event) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


class ListSink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event | dict) -> None:
        self.events.append(Event.from_dict(as_sent(event)))  # as the parent reads it back


def read_events(path: str) -> list[Event]:
    events = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    events.append(Event.from_dict(json.loads(line)))
                except ValueError:
                    break  # a line cut short by a kill: everything before it stands
    except OSError:
        pass
    return events
