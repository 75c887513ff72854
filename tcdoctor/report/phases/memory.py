"""The memory phase: peak memory of one eager and one compiled call (probes/memory.py), in the warm process."""

from __future__ import annotations

from ..sections import Memory
from .phase import IN_PROCESS, WARM, Phase


def _fill(data: dict, m: dict) -> None:
    data["memory"].update(m)  # beside the compile phase's compile_peak_bytes


PHASES = (
    Phase(
        "memory",
        frozenset({WARM, IN_PROCESS}),
        ("memory",),
        measure="tcdoctor.probes.memory:phase_memory",
        order=100,
        fill=_fill,
        record=Memory,
    ),
)
