"""The timing phases: eager vs compiled per call (probes/timing.py) in the cold process (runtime), the
warm process (runtime_warm) and timing-only processes up to --processes (runtime_extra,
run/launcher.py); `derive` joins them into the headline speedup (report/processes/claims.py)."""

from __future__ import annotations

from ... import units
from ..sections import Runtime
from .phase import MAIN, TIMING, WARM, Fill, Phase


def _keep_timed(phase: str) -> Fill:
    """Keep a process's timing for `derive` (report/processes/claims.py joins them)."""

    def fill(data: dict, r: dict) -> None:
        data.setdefault("_timed", {})[phase] = r

    return fill


def _fill_runtime(data: dict, r: dict) -> None:
    """The cold process's timing: the runtime section's per-process figures (eager, compiled), and
    the first of the processes `derive` joins into the headline speedup."""
    data["runtime"] = dict(r)
    _keep_timed("runtime")(data, r)


def _headline(d: dict) -> str | None:
    """The process's speedup with its CI."""
    r = Runtime.from_dict(d)
    return units.ratio(r.speedup, r.speedup_ci) if r.speedup is not None else None


def _timed_besides(name: str, process: str, measure: str, order: int, where: str) -> Phase:
    """A process timed besides the cold one: its timing only kept for `derive`, under its name."""
    return Phase(
        name,
        frozenset({process}),
        (),
        measure=f"tcdoctor.probes.timing:{measure}",
        order=order,
        fill=_keep_timed(name),
        label=f"timing ({where})",
        headline=_headline,
    )


PHASES = (
    Phase(
        "runtime",
        MAIN,
        ("runtime",),
        measure="tcdoctor.probes.timing:phase_runtime",
        order=70,
        fill=_fill_runtime,
        record=Runtime,
        label="timing",
        headline=_headline,
    ),
    _timed_besides("runtime_warm", WARM, "phase_runtime", 80, "warm process"),
    _timed_besides("runtime_extra", TIMING, "phase_runtime_extra", 90, "timing-only process"),
)
