"""The eager phase: the reference call (its output for numerics, its wall time); fatal when it fails."""

from __future__ import annotations

from ... import units
from .phase import MAIN, Phase


def _fill(data: dict, e: dict) -> None:
    """The eager side's first call: its time beside the compiled one's, its memory peak beside the
    memory phase's figures (the strategy tables' eager row reads both)."""
    data["compile"]["eager_first_call_s"] = e.get("first_call_s")
    if e.get("first_call_peak_bytes") is not None:
        data["memory"]["eager_first_call_peak_bytes"] = e["first_call_peak_bytes"]
        data["memory"]["first_call_method"] = e.get("first_call_peak_method")


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
        fill=_fill,
        fatal=True,
        label="eager call",
        headline=_headline,
    ),
)
