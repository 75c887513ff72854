"""What a compiled call leaves behind: its peak memory (`Memory`) and its numerics (`Numerics`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..attribution import DriftOrigin, MemoryAttribution
from ..record import Record


@dataclass
class Memory(Record):
    """Peak memory of one eager and one compiled call, and of the compile (probes/memory.py)."""

    OMIT_NONE = ("not_measured", "attribution")

    eager_peak_bytes: int | None = None
    compiled_peak_bytes: int | None = None
    compile_peak_bytes: int | None = None
    compile_peak_method: str | None = None
    method: str | None = None
    ratio: float | None = None
    eager: dict[str, Any] | None = None
    compiled: dict[str, Any] | None = None
    not_measured: str | None = None
    attribution: MemoryAttribution | None = None  # where the growth is (report/attribution.py)


@dataclass
class Numerics(Record):
    """Compiled vs eager against an fp64 reference, output by output (probes/numerics.py)."""

    OMIT_NONE = ("not_measured", "drift")

    passed: bool | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    min_cosine: float | None = None
    compared: int | None = None
    tensors_compared: int | None = None
    failed_outputs: list[str] | None = None
    not_compared: list[Any] | None = None
    outputs: list[dict] | None = None
    fp64_reference: bool | None = None
    fp64_unavailable_why: str | None = None
    rng: dict[str, Any] | None = None
    state: str | None = None
    method: str | None = None
    not_measured: str | None = None
    drift: DriftOrigin | None = None  # where the numbers drift (report/attribution.py)
