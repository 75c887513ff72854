"""The compile sections: the first call's compile time (`CompileTime`, with its per-frame
`CompileGraphs`) and the guards (`Guards`, with `guard_cost`, the figure the report shows)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..keyed import Keyed
from ..record import Record
from ..rules import (
    cold_warm_ratio,
    guard_share,
)
from .strategies import CompileRemedies, CudaGraphs

GUARDS_BY_REMOVAL = "removal"  # A/B: calls timed with and without guard evaluation
GUARDS_BY_PROFILER = "profiler"  # 'TorchDynamo Cache Lookup' events


def guard_cost(profile: dict) -> dict:
    """The guard cost the report shows, from the profile phase's result: the A/B figure (guards
    removed, probes/guard_ab.py) where it is exact, else the profiler's, saying which and why.
    Used by the report's Guards section, the stance fix's trigger and the progress line."""
    ab = profile.get("guard_ab") or {}
    profiler_s = profile.get("guard_overhead_s_per_call")
    if ab.get("overhead_s_per_call") is not None:
        method = ab.get("method") or ""
        if ab.get("clamped"):
            method += f"; {ab['clamped']}"
        return {
            "overhead_s_per_call": ab["overhead_s_per_call"],
            "overhead_ci_s": ab.get("overhead_ci_s"),
            "overhead_source": GUARDS_BY_REMOVAL,
            "overhead_method": method,
            "profiler_overhead_s_per_call": profiler_s,
            # the share is taken of the with-guards median of the same samples, not of the timing
            # phase's median (another process, another moment's load)
            "call_s": ab.get("with_guards_median_s"),
        }
    why = ab.get("not_exact") or ab.get("not_measured")
    method = profile.get("method") or ""
    return {
        "overhead_s_per_call": profiler_s,
        "overhead_source": GUARDS_BY_PROFILER if profiler_s is not None else None,
        "overhead_method": method + (f"; not by removal: {why}" if why else ""),
        "profiler_overhead_s_per_call": profiler_s,
    }


@dataclass
class CompileFrame(Keyed):
    """One frame the cold first call compiled (probes/compile_graphs.py), joined in the parent with
    the warm process's seconds and the steady-state runs per call (report/compile_joins.py): each
    join's keys are present where it ran, so a row keeps the keys it was given, in their order
    (`Keyed`). The probe's other keys (nodes, guards, each compile phase's seconds, cache, …) and
    the joins' (warm_cache, median_s_per_call, …) stay in `extra`."""

    compile_id: str | None = None
    function: str | None = None
    file: str | None = None
    line: int | None = None
    origin: str | None = None  # "user", or the library that owns the frame
    owner: str | None = None
    user_frame: dict | None = None  # the user's line that led into code they did not write
    ops: int | None = None
    cold_s: float | None = None
    warm_s: float | None = None
    runs_per_call: float | None = None
    median_self_s_per_call: float | None = None  # profiled, without the regions nested in it
    unused_in_steady_state: bool | None = None
    time_s_per_call: float | None = None  # median_self_s_per_call scaled to the unprofiled call

    @property
    def time_per_call(self) -> float | None:
        """The frame's time per steady-state call as the report shows it: scaled to the
        unprofiled call where the report scaled it (`compile_joins.scale_to_call`), else its
        profiled own time (older reports)."""
        t = self.time_s_per_call
        return t if t is not None else self.median_self_s_per_call


@dataclass
class CompileCheck(Keyed):
    """The frames' sum beside the compile part of the cold first call (`compile_graphs.coverage`):
    the part is the first call less the eager call, an estimate."""

    rows_cold_s: float | None = None
    first_call_s: float | None = None
    eager_call_s: float | None = None
    first_call_compile_s: float | None = None
    coverage: float | None = None  # rows_cold_s / first_call_compile_s
    not_in_rows_s: float | None = None


@dataclass
class TimeScale(Keyed):
    """How the profiled time/call was scaled to the unprofiled call (compile_joins.scale_to_call):
    `why` when not scaled, else the factor and the two medians it is the ratio of."""

    scaled: bool | None = None
    why: str | None = None
    factor: float | None = None
    profiled_call_s: float | None = None
    compiled_median_s: float | None = None
    sum_rescaled: bool | None = None  # scaled down once more so the frames sum to the median
    method: str | None = None


@dataclass
class CompileGraphs(Record):
    """Where the compile time goes: one row per frame the cold first call compiled, largest cold
    seconds first (probes/compile_graphs.py), joined with the warm process's seconds and the
    steady-state runs per call (report/compile_joins.py); `check` holds the rows' sum beside the
    compile part of the first call (`coverage`).
    """

    OMIT_NONE = ("regions_not_in_table", "time_scale")

    rows: list[CompileFrame] = field(default_factory=list)
    check: CompileCheck = field(default_factory=CompileCheck)
    method: str | None = None
    regions_not_in_table: list[str] | None = (
        None  # ran in steady state, not compiled by the first call
    )
    time_scale: TimeScale | None = None


@dataclass
class IsaProbe(Keyed):
    """Inductor's one-off CPU ISA probe inside the cold first call (probes/isa_probe.py, inductor
    only): `seconds` from its first source written to its last library built, `build_s` the builds
    alone (what a folder probed before skips), the frame whose cold time holds it. `seconds` None
    with `none` (no probe was built; `seeded`: the folder was seeded with the machine's probed
    one) or `not_measured` (why). A report keeps the keys it was given, in their order."""

    seconds: float | None = None
    build_s: float | None = None
    builds: int | None = None
    frame: str | None = None  # compile id of the frame that paid it
    none: bool | None = None
    seeded: bool | None = None
    method: str | None = None
    not_measured: str | None = None


@dataclass
class CompileTime(Record):
    """First compiled call, cold cache (probes/first_call.py) and warm cache (a second process).

    The cold first call is stored once (`first_call_s`, its cache counters in `cache`); `cold_s`
    and `cold_cache` are the names the verdict and schema-1 readers use, written as derived keys.
    `graphs` (where the compile time goes, frame by frame) is written only when measured, so a
    report saved before it existed re-renders unchanged.
    """

    DERIVED = ("cold_s", "cold_cache")
    OMIT_NONE = (
        "not_measured",
        "warm_not_measured",
        "graphs",
        "remedies",
        "isa_probe",
        "eager_first_call_s",
        "cudagraphs",
    )

    first_call_s: float | None = None
    eager_first_call_s: float | None = None  # the eager side's first call, for the strategy tables
    warm_s: float | None = None
    phases: dict[str, float] | None = None
    phases_method: str | None = None
    warm_phases: dict[str, float] | None = None
    warm_method: str | None = None
    cache: dict[str, int] | None = None
    warm_cache: dict[str, int] | None = None
    frames: list[dict] | None = None
    frames_compiled: int | None = None
    break_sites: list[dict] | None = None
    native_compile_s: float | None = None
    outside_compiler_s: float | None = None
    peak_rss_delta_bytes: int | None = None
    recompile_time_s: float | None = None
    graphs: CompileGraphs | None = None
    remedies: CompileRemedies | None = None  # tried remedies for the cold start, when planned
    isa_probe: IsaProbe | None = None
    # CUDA graphs captured vs skipped, PyTorch's reasons (probes/cudagraphs.py), modes that ask
    cudagraphs: CudaGraphs | None = None
    not_measured: str | None = None
    warm_not_measured: str | None = None

    @classmethod
    def upgrade(cls, d: dict) -> dict:
        d.setdefault("first_call_s", d.get("cold_s"))
        d.setdefault("cache", d.get("cold_cache"))
        return d

    @property
    def cold_s(self) -> float | None:
        return self.first_call_s

    @property
    def cold_cache(self) -> dict[str, int] | None:
        return self.cache

    @property
    def cold_warm_ratio(self) -> float | None:
        return cold_warm_ratio(self.first_call_s, self.warm_s)

    @property
    def probed_cold_s(self) -> float | None:
        """The cold first call on a machine that has compiled before: less the builds of Inductor's
        CPU ISA probe (`isa_probe.build_s`), which a cache folder probed before skips (its load
        checks stay: every process pays them). None where the builds were not read."""
        build = self.isa_probe.build_s if self.isa_probe else None
        if self.first_call_s is None or build is None:
            return None
        return max(0.0, self.first_call_s - build)

    @property
    def cudagraph_skips(self) -> int:
        return (self.cache or {}).get("cudagraph_skips") or 0


@dataclass
class Guards(Record):
    """Guard count (CompilationMetrics) and evaluation cost per call (probes/guards.py).

    `call_s` is the compiled call's median the share is taken of: the A/B's with-guards median when
    the cost is by removal (`guard_cost`), else the timing phase's (set at assembly from Runtime).
    """

    DERIVED = ("overhead_fraction",)
    OMIT_NONE = (
        "not_measured",
        "overhead_source",
        "overhead_ci_s",
        "profiler_overhead_s_per_call",
        "removal",
    )

    count: int | None = None
    source: str | None = None  # of the count
    per_frame: list[dict] | None = None
    overhead_s_per_call: float | None = None
    overhead_method: str | None = None
    call_s: float | None = None
    not_measured: str | None = None
    # which figure overhead_s_per_call is: GUARDS_BY_REMOVAL (A/B) or GUARDS_BY_PROFILER (guard_cost)
    overhead_source: str | None = None
    overhead_ci_s: list[float] | None = None  # the A/B's 95% CI
    profiler_overhead_s_per_call: float | None = None  # the cross-check, always the profiler's
    removal: dict | None = None  # the A/B's own figures, or why it was not used

    @property
    def by_removal(self) -> bool:
        return self.overhead_source == GUARDS_BY_REMOVAL

    @classmethod
    def upgrade(cls, d: dict) -> dict:
        """A schema-1 file stored the share, not the call it was taken of: invert it."""
        frac, cost = d.get("overhead_fraction"), d.get("overhead_s_per_call")
        if d.get("call_s") is None and frac and cost is not None:
            d["call_s"] = cost / frac
        return d

    @property
    def overhead_fraction(self) -> float | None:
        return guard_share(self.overhead_s_per_call, self.call_s)
