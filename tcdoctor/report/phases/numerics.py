"""The numerics phase: compiled vs eager outputs against an fp64 reference (probes/numerics.py)."""

from __future__ import annotations

from ..sections import Numerics
from .phase import MAIN, Phase

PHASES = (
    Phase(
        "numerics",
        MAIN,
        ("numerics",),
        measure="tcdoctor.probes.numerics:phase_numerics",
        order=120,
        record=Numerics,
    ),
)
