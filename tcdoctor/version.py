"""The package version, in the lowest layer (the report records it; the package re-exports it)."""

from __future__ import annotations

__version__ = "0.1.0"
