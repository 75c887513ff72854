"""The memory phase: peak memory of one eager and one compiled call (probes/memory.py), in the warm process."""

from __future__ import annotations

from ... import units
from ..sections import Memory
from .phase import IN_PROCESS, WARM, Phase


def _fill(data: dict, m: dict) -> None:
    data["memory"].update(m)  # beside the compile phase's compile_peak_bytes


def _headline(d: dict) -> str | None:
    m = Memory.from_dict(d)
    e, c = m.eager_peak_bytes, m.compiled_peak_bytes
    if e is None and c is None:
        return None
    return f"peak {units.nbytes(e)} eager, {units.nbytes(c)} compiled"


PHASES = (
    Phase(
        "memory",
        frozenset({WARM, IN_PROCESS}),
        ("memory",),
        measure="tcdoctor.probes.memory:phase_memory",
        order=100,
        fill=_fill,
        record=Memory,
        label="memory",
        headline=_headline,
    ),
)
