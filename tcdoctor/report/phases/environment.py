"""The environment phase: torch, Python, device, threads, the workload, and the copies' fidelity check."""

from __future__ import annotations

from .phase import MAIN, Phase, put

PHASES = (
    Phase(
        "environment",
        MAIN,
        (),
        measure="tcdoctor.probes.environment:phase_environment",
        order=10,
        fill=put("environment"),
    ),
)
