"""The environment phase: torch, Python, device, threads, the workload, and the copies' fidelity check."""

from __future__ import annotations

from ... import units
from .phase import MAIN, Phase, put


def _headline(d: dict) -> str | None:
    """'cpu, torch 2.x, 4 threads'."""
    dev, torch_v, threads = d.get("device"), d.get("torch"), d.get("threads")
    parts = [
        dev,
        f"torch {torch_v}" if torch_v else None,
        units.threads(d) if threads is not None else None,
    ]
    return ", ".join(p for p in parts if p) or None


PHASES = (
    Phase(
        "environment",
        MAIN,
        (),
        measure="tcdoctor.probes.environment:phase_environment",
        order=10,
        fill=put("environment"),
        label="environment",
        headline=_headline,
    ),
)
