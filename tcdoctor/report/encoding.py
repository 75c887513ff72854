"""JSON encoding of reports and phase events: strictly valid JSON (no inf/nan), anything else as str."""

from __future__ import annotations

import json
import math
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
