"""The drift-localisation phase (issue 36): when numerics fail or come within 2× of the tolerance,
the deepest module whose own output drifts on exact inputs (probes/drift.py; records in
report/attribution.py). Last: it compiles parts of the model, after the recompile sequence."""

from __future__ import annotations

from .phase import MAIN, Phase


def _fill(data: dict, d: dict) -> None:
    data["numerics"]["drift"] = d


def _not_measured(data: dict, sections: tuple[str, ...], why: str) -> None:
    data["numerics"].setdefault("drift", {"not_measured": why})


PHASES = (
    Phase(
        "drift",
        MAIN,
        (),
        measure="tcdoctor.probes.drift:phase_drift",
        order=135,
        fill=_fill,
        not_measured=_not_measured,
    ),
)
