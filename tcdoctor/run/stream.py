"""Phase events as JSON lines, flushed and fsynced one by one so a killed child loses nothing finished."""

from __future__ import annotations

import json
import os

from ..report.encoding import as_sent, dumps


class FileSink:
    def __init__(self, path: str):
        self.path = path

    def __call__(self, event: dict) -> None:
        line = dumps(event) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


class ListSink:
    def __init__(self) -> None:
        self.events: list[dict] = []

    def __call__(self, event: dict) -> None:
        self.events.append(as_sent(event))


def read_events(path: str) -> list[dict]:
    events = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    break  # a line cut short by a kill: everything before it stands
    except OSError:
        pass
    return events
