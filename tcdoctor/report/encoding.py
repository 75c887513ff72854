"""JSON encoding of reports and phase events: strictly valid JSON (no inf/nan), a typed record as
its JSON (`Record.to_dict`), anything else as str."""

from __future__ import annotations

import json
import math
from typing import Any

from .files import write_atomic
from .record import Record


def _clean(obj: Any) -> Any:
    """JSON has no inf/nan; keep the report strictly valid JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, Record):  # a typed record built in a child: its JSON, the report's
        return _clean(obj.to_dict())
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def dumps(obj: Any, **kw: Any) -> str:
    return json.dumps(_clean(obj), default=str, allow_nan=False, **kw)


def as_sent(obj: Any) -> Any:
    """`obj` as the parent reads it back from a child's event line: its JSON, parsed."""
    return json.loads(dumps(obj))


class Document(Record):
    """A record saved as a JSON file of its own: the report (model.py), the sweep overview
    (sweep.py)."""

    def to_json(self, indent: int | None = 2) -> str:
        return dumps(self.to_dict(), indent=indent)

    def save(self, path: str) -> None:
        """Its JSON, written atomically (report/files.py)."""
        write_atomic(path, self.to_json())
