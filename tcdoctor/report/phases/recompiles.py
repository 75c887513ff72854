"""The recompiles phase: the workload's variants fed to the first call's copy (probes/recompiles.py).

Last on purpose: a hang in the user's variants loses nothing measured.
"""

from __future__ import annotations

from ..sections import Recompiles
from .phase import MAIN, Phase


def _fill(data: dict, r: dict) -> None:
    # the 'automatic' shape row it also measured goes to the strategies section (run/assemble.py)
    data["recompiles"] = {k: v for k, v in r.items() if k != "automatic_row"}
    data["compile"]["recompile_time_s"] = r["recompile_time_s"]


def _headline(d: dict) -> str | None:
    r = Recompiles.from_dict(d)
    if r.count is None:
        return None
    return str(r.count) + (" (recompile limit hit: later calls run eagerly)" if r.limit_hit else "")


PHASES = (
    Phase(
        "recompiles",
        MAIN,
        ("recompiles",),
        measure="tcdoctor.probes.recompiles:phase_recompiles",
        order=130,
        fill=_fill,
        record=Recompiles,
        label="recompiles",
        headline=_headline,
    ),
)
