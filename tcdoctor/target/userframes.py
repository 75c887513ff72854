"""Tell the user's own source files apart from torch, site-packages, the stdlib and tcdoctor."""

from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig
import traceback
from typing import Iterable

_LIB_DIRS = tuple(
    os.path.realpath(p)
    for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    if p
)
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the tcdoctor package
_TRAINING_FILE = os.path.join(_OWN_DIR, "experiments", "training.py")


def _torch_dir() -> str | None:
    """torch's package folder, found without importing torch (the parent process never does)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    locs = list(spec.submodule_search_locations or []) if spec else []
    return os.path.realpath(locs[0]) if locs else None


_TORCH_DIR = _torch_dir()

ORIGINS = {
    "user": "your code",
    "library": "a library you call",
    "pytorch": "PyTorch itself",
    "step": "tcdoctor's standard training step",
}


def origin_of(filename: str | None) -> str:
    """Who owns the code at `filename`: 'user', 'library' (site-packages), 'pytorch' or 'step'."""
    if not filename:
        return "pytorch"
    real = os.path.realpath(filename)
    if real == _TRAINING_FILE:
        return "step"
    if _TORCH_DIR and real.startswith(_TORCH_DIR + os.sep):
        return "pytorch"
    return "user" if is_user_file(filename) else "library"


def package_of(filename: str | None) -> str | None:
    """The top-level package a library file belongs to ('transformers', 'torch'), or None."""
    if not filename:
        return None
    parts = os.path.realpath(filename).split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            i = parts.index(marker)
            if i + 1 < len(parts):
                return os.path.splitext(parts[i + 1])[0]
    if _TORCH_DIR and os.path.realpath(filename).startswith(_TORCH_DIR + os.sep):
        return "torch"
    return None


def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    real = os.path.realpath(filename)
    if real.startswith(_OWN_DIR + os.sep) or "site-packages" in real or "dist-packages" in real:
        return False
    return not any(real.startswith(d + os.sep) for d in _LIB_DIRS)


def source_line(filename: str, line: int) -> str:
    return linecache.getline(filename, line).strip()


def deepest_user_frame(frames: Iterable[tuple[str, int, str]]) -> dict | None:
    """Last (innermost) frame in user code from (file, line, function) triples."""
    found = None
    for filename, line, func in frames:
        if is_user_file(filename):
            found = {
                "file": filename,
                "line": line,
                "function": func,
                "code": source_line(filename, line),
            }
    return found


def where_from_exception(exc: BaseException) -> dict | None:
    tb = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    return deepest_user_frame((f.filename, f.lineno or 0, f.name) for f in tb)


def describe_exception(exc: BaseException) -> dict:
    """A one-line message plus the user frame it came from, for the report's `errors`."""
    first = (str(exc).strip().splitlines() or [""])[0]
    msg = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return {"message": msg[:2000], "where": where_from_exception(exc)}


def where_str(where: dict | None) -> str:
    return f" (at {where['file']}:{where['line']})" if where else ""


def python_version() -> str:
    return sys.version.split()[0]


_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")


def readable_function(name: str | None) -> str | None:
    """Dynamo names the code after a graph break `torch_dynamo_resume_in_forward_at_14`; say it in words."""
    if not name:
        return name
    m = _RESUME.match(name)
    return f"{m['fn']} (resumed after line {m['line']})" if m else name
