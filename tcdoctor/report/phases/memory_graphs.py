"""The memory-attribution phase (issue 36): where a compiled call's peak above eager's is held, by
compiled graph (probes/memory_graphs.py; the wording and the join with each graph's user line in
report/attribution.py). In the warm process, after the memory phase it reads; below the growth
threshold (RULES memory_growth_*) it calls nothing."""

from __future__ import annotations

from .phase import IN_PROCESS, WARM, Phase


def _fill(data: dict, a: dict) -> None:
    data["memory"]["attribution"] = a  # joined with the compile graphs in derive (attach_memory)


def _not_measured(data: dict, sections: tuple[str, ...], why: str) -> None:
    data["memory"].setdefault("attribution", {"not_measured": why})


PHASES = (
    Phase(
        "memory_graphs",
        frozenset({WARM, IN_PROCESS}),
        (),
        measure="tcdoctor.probes.memory_graphs:phase_memory_graphs",
        order=105,
        fill=_fill,
        not_measured=_not_measured,
    ),
)
