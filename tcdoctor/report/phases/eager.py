"""The eager phase: the reference call (its output for numerics, its wall time); fatal when it fails."""

from __future__ import annotations

from ... import units
from .phase import MAIN, Phase, keep_nothing


def _headline(d: dict) -> str | None:
    first = d.get("first_call_s")
    return f"first call {units.seconds(first)}" if first is not None else None


PHASES = (
    Phase(
        "eager",
        MAIN,
        (),
        measure="tcdoctor.probes.eager:phase_eager",
        order=20,
        fill=keep_nothing,
        fatal=True,
        label="eager call",
        headline=_headline,
    ),
)
