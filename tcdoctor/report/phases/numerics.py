"""The numerics phase: compiled vs eager outputs against an fp64 reference (probes/numerics.py)."""

from __future__ import annotations

from ... import units
from ..sections import Numerics
from .phase import MAIN, Phase


def _headline(d: dict) -> str | None:
    """'passed (max abs err 1.2e-07)', 'FAILED …', or why it was not measured."""
    n = Numerics.from_dict(d)
    if n.not_measured:
        random = (n.rng or {}).get("stochastic")
        return "not measured" + (" (random model: --fallback-random compares)" if random else "")
    verdict = {True: "passed", False: "FAILED", None: "not judged"}.get(n.passed, "not judged")
    err = n.max_abs_err
    return verdict + (f" (max abs err {units.sci(err)})" if err is not None else "")


PHASES = (
    Phase(
        "numerics",
        MAIN,
        ("numerics",),
        measure="tcdoctor.probes.numerics:phase_numerics",
        order=120,
        record=Numerics,
        label="numerics",
        headline=_headline,
    ),
)
