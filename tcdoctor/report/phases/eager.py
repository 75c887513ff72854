"""The eager phase: the reference call (its output for numerics, its wall time); fatal when it fails."""

from __future__ import annotations

from .phase import MAIN, Phase, keep_nothing

PHASES = (
    Phase(
        "eager",
        MAIN,
        (),
        measure="tcdoctor.probes.eager:phase_eager",
        order=20,
        fill=keep_nothing,
        fatal=True,
    ),
)
