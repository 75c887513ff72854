"""Number formatting shared by the renderers (one way to write a duration, a size, a ratio)."""
from __future__ import annotations

import os

from typing import Any

NA = "not measured"


def seconds(s: Any) -> str:
    if s is None or isinstance(s, str):
        return NA if s is None else s
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def nbytes(b: Any) -> str:
    if b is None:
        return NA
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(b) < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024
    return str(b)


def ratio(x: Any, ci: Any = None) -> str:
    if x is None:
        return NA
    s = f"{x:.2f}×"
    if ci and None not in ci:
        s += f" (95% CI {ci[0]:.2f}–{ci[1]:.2f})"
    return s


def count(n: Any) -> str:
    return NA if n is None else str(n)


def sci(x: Any) -> str:
    return NA if x is None else (x if isinstance(x, str) else f"{x:.3g}")


DECISION_TEXT = {
    "compile": "Compile it",
    "compile-after-fixes": "Compile it after these fixes",
    "dont-compile": "Don't compile it (yet)",
}


def break_site(f: dict) -> str:
    """' — inside torch _detect_is_causal_mask (transformer.py:1245), PyTorch itself' for breaks in code the user did not write."""
    if not f.get("origin") or f["origin"] == "user":
        return ""
    site = f.get("site") or {}
    name = os.path.basename(site.get("file") or "?")
    return f" — inside {f.get('library') or ''} {site.get('function') or ''} ({name}:{site.get('line')}), {f.get('origin_text')}".replace("  ", " ")
