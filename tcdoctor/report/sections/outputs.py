"""What a compiled call leaves behind: its peak memory (`Memory`) and its numerics (`Numerics`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..attribution import DriftOrigin, MemoryAttribution, Miscompile
from ..numerics_row import NumericsRow
from ..record import Record


@dataclass
class Memory(Record):
    """Memory per side as the device holds it (probes/memory.py): the first call's peak, the
    steady call's peak, what the side holds after warm-up from before its first call; and the
    compile's RSS growth. `footprint` (held + steady peak) is what growth is judged on."""

    OMIT_NONE = (
        "not_measured",
        "attribution",
        "eager_first_call_peak_bytes",
        "compiled_first_call_peak_bytes",
        "first_call_method",
        "eager_held_bytes",
        "compiled_held_bytes",
        "compiled_pool_bytes",
        "held_method",
        "held_not_measured",
    )

    eager_peak_bytes: int | None = None
    compiled_peak_bytes: int | None = None
    eager_first_call_peak_bytes: int | None = None
    compiled_first_call_peak_bytes: int | None = None
    first_call_method: str | None = None
    eager_held_bytes: int | None = None
    compiled_held_bytes: int | None = None
    compiled_pool_bytes: int | None = None  # CUDA graphs' private pools, inside compiled_held
    held_method: str | None = None
    held_not_measured: str | None = None
    compile_peak_bytes: int | None = None
    compile_peak_method: str | None = None
    method: str | None = None
    ratio: float | None = None
    eager: dict[str, Any] | None = None
    compiled: dict[str, Any] | None = None
    not_measured: str | None = None
    attribution: MemoryAttribution | None = None  # where the growth is (report/attribution.py)

    @property
    def eager_footprint_bytes(self) -> int | None:
        return footprint(self.eager_held_bytes, self.eager_peak_bytes)

    @property
    def compiled_footprint_bytes(self) -> int | None:
        return footprint(self.compiled_held_bytes, self.compiled_peak_bytes)

    @property
    def gate_ratio(self) -> float | None:
        """Compiled / eager as `check --max-memory-ratio` judges it: the footprints (held +
        steady peak) where both were measured, else the steady peaks (`ratio`)."""
        e, c = self.eager_footprint_bytes, self.compiled_footprint_bytes
        if e and c is not None:
            return c / e
        if self.eager_peak_bytes and self.compiled_peak_bytes is not None:
            return self.compiled_peak_bytes / self.eager_peak_bytes
        return self.ratio


def footprint(held: int | None, peak: int | None) -> int | None:
    """What a side occupies while it runs: what it holds between calls plus a call's peak above
    that (None where either is unknown)."""
    return None if held is None or peak is None else int(held) + int(peak)


@dataclass
class Numerics(Record):
    """Compiled vs eager against an fp64 reference, output by output (probes/numerics.py)."""

    OMIT_NONE = ("not_measured", "drift", "miscompile", "mutates")

    passed: bool | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    min_cosine: float | None = None
    compared: int | None = None
    tensors_compared: int | None = None
    failed_outputs: list[str] | None = None
    not_compared: list[NumericsRow] | None = None  # path and kind of each leaf not judged
    outputs: list[NumericsRow] | None = None
    fp64_reference: bool | None = None
    fp64_unavailable_why: str | None = None
    rng: dict[str, Any] | None = None
    # what the eager call changed in place: {"inputs": ["args[1]"], "state": [...]} (outputs.mutated)
    mutates: dict[str, list[str]] | None = None
    state: str | None = None
    method: str | None = None
    not_measured: str | None = None
    drift: DriftOrigin | None = None  # where the numbers drift (report/attribution.py)
    miscompile: Miscompile | None = None  # the graph and call that diverge (probes/diverge.py)


def mutates_text(mutates: dict | None) -> str | None:
    """'changes in place: input args[1]; model state: model.count' for a call that changes its
    inputs or its state in place (None when it changes nothing, or was not read)."""
    if not mutates:
        return None
    parts = []
    if mutates.get("inputs"):
        parts.append("input(s) " + ", ".join(mutates["inputs"][:8]))
    if mutates.get("state"):
        more = len(mutates["state"]) - 8
        parts.append(
            "state " + ", ".join(mutates["state"][:8]) + (f" and {more} more" if more > 0 else "")
        )
    return "changes in place: " + "; ".join(parts) if parts else None
