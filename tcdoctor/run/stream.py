"""Phase events as JSON lines, flushed and fsynced one by one so a killed child loses nothing finished."""

from __future__ import annotations

import json
import math
import os
from typing import Any


def _clean(obj: Any) -> Any:
    """JSON has no inf/nan; keep the report strictly valid JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def dumps(obj: Any, **kw: Any) -> str:
    return json.dumps(_clean(obj), default=str, allow_nan=False, **kw)


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
        self.events.append(json.loads(dumps(event)))


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
