"""The typed records of the across-process speedup (report/processes/): one process's row
(`ProcessRow`), an allocator regime's figures (`Regime`), two modes within a regime (`ModeRow`, each
side a `Mode`), how many processes timed and why they stopped (`Sequence`), and the load on the
processes decided on (`Load`). `Runtime` (report/sections/runtime.py) holds them; the JSON is the
one these dicts had (each field named as its key, in the same order; a key written only when set is
in OMIT_NONE, so a saved report reads back and writes out unchanged).

Every reader reads attributes (the dict shim that let units.py, render/, verdict/ and checks/
index them as the dicts they were is gone). A row that arrives as a dict (a baseline's processes
sent to the timing loop as JSON, a hand-built test row) becomes typed once, at the function that
takes it (`ProcessRow.of`).

Torch-free: assembled in the parent, re-read by `tcdoctor report`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, TypeVar

from ..keyed import Keyed
from ..record import Record

R = TypeVar("R", bound="Row")


class Row(Record):
    """A Record read by attribute, typed once where it arrives as a dict (`of`), and equal to the
    dict of its JSON (a row sent to a child as JSON and read back there)."""

    @classmethod
    def of(cls: type[R], value: R | Mapping[str, Any]) -> R:
        """`value` typed: itself when it is one already, else read from its dict."""
        return value if isinstance(value, cls) else cls.from_dict(dict(value))

    def __eq__(self, other: object) -> bool:
        """Equal to a row of its class with the same JSON, or to the dict of that JSON (a row sent
        as JSON and read back as a dict: a baseline's processes in a child's spec)."""
        if isinstance(other, Row):
            return type(other) is type(self) and other.to_dict() == self.to_dict()
        if isinstance(other, Mapping):
            return dict(other) == self.to_dict()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dict it was


@dataclass
class Timing(Record):
    """One side of the timed pair: per-call statistics of the interleaved samples."""

    median_s: float | None = None
    mean_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    p10_s: float | None = None
    p25_s: float | None = None
    p75_s: float | None = None
    p90_s: float | None = None
    samples: int | None = None
    minor_faults_per_call: float | None = None


@dataclass(eq=False)
class ProcessRow(Row):
    """One timed process's figures (regimes.row): its paired speedup and interval, each side's
    median, minor faults per call, allocator regime and load; `why` it ran (a timing-only process),
    `probe` (an environment the user did not launch: never decided on) and `excluded` (left out of
    the headline, with the reason: disturbed by load, or an analysis process that times the call
    unlike the timing-only processes)."""

    OMIT_NONE = ("why", "load", "probe", "excluded")

    process: str | None = None
    env: str | None = None
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    eager_median_s: float | None = None
    compiled_median_s: float | None = None
    eager_faults_per_call: float | None = None
    compiled_faults_per_call: float | None = None
    regime: str | None = None
    samples: int | None = None
    why: str | None = None
    load: PairLoad | None = None  # the process's own timing load (probes/timing.py)
    probe: str | None = None
    excluded: str | None = None


@dataclass
class PairLoad(Keyed):
    """The load on one process's timed pairs (probes/timing.py's `load`, read by regimes.py and
    units.load): pairs rerun for load, kept pairs still loaded, other programs' cores (the median
    round's, the most of any round), the cores nobody used in the median round. Keyed: the probe's
    keys in its order (its method, own cores and switches stay in `extra`)."""

    retimed_pairs: int | None = None
    loaded_pairs: int | None = None
    other_cores_median: float | None = None
    other_cores_max: float | None = None
    idle_cores_median: float | None = None
    not_measured: str | None = None


@dataclass(eq=False)
class Mode(Row):
    """One side of a gap between neighbouring processes' speedups (regimes.modes)."""

    processes: list[str] = field(default_factory=list)
    speedup: float | None = None


@dataclass(eq=False)
class ModeRow(Row):
    """Two modes found among the processes of one allocator regime (None: the processes fell in one)."""

    regime: str | None = None
    modes: list[Mode] = field(default_factory=list)


@dataclass(eq=False)
class Regime(Row):
    """One allocator regime's processes and figures (regimes.regime_figures): `decided` False where
    its interval is only its processes' own (fewer than MIN_PER_REGIME processes of its own)."""

    OMIT_NONE = ("decided", "modes")

    regime: str | None = None
    processes: list[str] = field(default_factory=list)
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    decided: bool | None = None
    eager_faults_per_call: float | None = None
    compiled_faults_per_call: float | None = None
    modes: list[Mode] | None = None

    @property
    def is_decided(self) -> bool:
        """Decided on its own processes (a report written before `decided` existed: yes)."""
        return self.decided is not False


@dataclass(eq=False)
class Sequence(Row):
    """How the launcher chose the number of processes (sequential.progress, experiments/plan.py):
    the cap, the looks it allows and their level, the thresholds and questions in play, the
    equivalence margin, how many timed, why they stopped, the counts looked at, how many counted."""

    OMIT_NONE = (
        "cap",
        "looks",
        "level",
        "thresholds",
        "questions",
        "margin",
        "timed",
        "stopped",
        "looks_at",
        "counted",
    )

    cap: int | None = None
    looks: int | None = None
    level: float | None = None
    thresholds: list[float] | None = None
    questions: list[str] | None = None
    margin: float | None = None
    timed: int | None = None
    stopped: str | None = None
    looks_at: list[int] | None = None
    counted: int | None = None


@dataclass(eq=False)
class Load(Row):
    """The load on the processes decided on, per pair (regimes.under_load): kept pairs still
    loaded, of how many; processes with most pairs loaded, of how many; sustained (every process
    loaded: the figures are not a quiet machine's); the text the report shows. Where no counted
    pair was loaded the runtime section keeps the cold process's own timing load instead
    (probes/timing.py's keys, kept in `extra`: the same JSON, its typed key first)."""

    OMIT_NONE = ("loaded_pairs", "pairs", "processes_loaded", "processes", "sustained", "text")

    loaded_pairs: int | None = None
    pairs: int | None = None
    processes_loaded: int | None = None
    processes: int | None = None
    sustained: bool | None = None
    text: str | None = None
