"""The ways of compiling tried beside the main analysis: modes, training ways, shape settings
(`StrategyRow`), regions (`RegionRow`, `Regions`), cold-start remedies (`RemedyRow`,
`CompileRemedies`), all in `Strategies`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ... import units
from ...thresholds import Rules
from ..keyed import Keyed
from ..record import Record
from ..rules import (
    break_even,
    faster_than_eager,
    row_interval,
    slower_than_eager,
)
from .runtime import ci_bounds, vs_eager


@dataclass
class CudaGraphReason(Keyed):
    """One reason PyTorch gave for skipping CUDA graphs, in its words (its first line), how many
    graphs it was given for, and the fix it calls for (probes/cudagraphs.py; None: none known)."""

    reason: str | None = None
    count: int | None = None
    fix: str | None = None


@dataclass
class CudaGraphs(Keyed):
    """CUDA graphs captured against skipped for a compile in a mode that asks for them
    (probes/cudagraphs.py): Inductor's FX graphs, those skipped (counter
    inductor.cudagraph_skips), those handed to CUDA graphs (`captured`, None: not measured), and
    PyTorch's reasons. Keyed: a saved report's keys are written back as they were."""

    graphs: int | None = None
    skipped: int | None = None
    captured: int | None = None
    reasons: list[CudaGraphReason] | None = None
    method: str | None = None

    @property
    def skipped_all(self) -> str | None:
        """'CUDA graphs skipped for 2 of 2 graph(s): skipping cudagraphs due to …' when PyTorch
        skipped every graph; None otherwise."""
        if not self.skipped or self.captured != 0:
            return None
        reasons = "; ".join(r.reason or "" for r in self.reasons or [])
        return f"CUDA graphs skipped for {self.skipped} of {self.graphs} graph(s): {reasons}"


@dataclass
class StrategyRow(Record):
    """One way of compiling, timed against eager: a mode, a training way, a shape setting,
    an ablation backend. The fields every row has are always written (null when not measured);
    those only one kind has are written when set, and detail no field models stays in `extra`."""

    OMIT_NONE = (
        "baseline",
        "note",
        "backend",
        "recompiles",
        "compiles",
        "compile_s",
        "limit_hit",
        "shapes",
        "changing_dims",
        "cache",
        "cache_start",
        "source",
        "decision_ci",
        "decision_method",
        "first_call_peak_bytes",
        "held_bytes",
        "eager_held_bytes",
        "cudagraphs",
        "isa_probe_s",
    )

    name: str | None = None
    source: str | None = None
    first_call_s: float | None = None
    median_s: float | None = None
    eager_median_s: float | None = None
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    samples: int | None = None
    peak_bytes: int | None = None  # the compiled steady call's peak (probes/memory.py)
    eager_peak_bytes: int | None = None
    first_call_peak_bytes: int | None = None  # the compiled first call's peak
    held_bytes: int | None = None  # what the compiled copy holds after warm-up
    eager_held_bytes: int | None = None
    # CUDA graphs captured vs skipped and PyTorch's reasons (probes/cudagraphs.py), modes asking
    cudagraphs: CudaGraphs | None = None
    numerics_passed: bool | None = None
    max_abs_err: float | None = None
    graph_breaks: int | None = None
    guards: int | None = None
    baseline: bool | None = None
    note: str | None = None
    cache: dict[str, int] | None = None  # compile cache counters of its first call
    cache_start: str | None = (
        None  # what its child's inductor cache held at start (run/launcher.py)
    )
    # its empty cache folder seeded with this machine's probed folder (run/isa_seed.py): the
    # Inductor CPU ISA probe builds its first call skipped, as the cold analysis process paid them
    isa_probe_s: float | None = None
    backend: str | None = None  # ablation rows
    compiles: int | None = None  # shape rows
    recompiles: int | None = None
    compile_s: float | None = None
    limit_hit: bool | None = None
    shapes: list[dict] | None = None
    changing_dims: list[str] | None = None
    # what its claims rest on: the speedup with the spread between processes, corrected for the
    # candidate rows (rules.row_decision_interval; set at assembly by verdict/tried.py)
    decision_ci: list[float] | None = None
    decision_method: str | None = None

    @property
    def decision_interval(self) -> tuple[float | None, float | None]:
        """The interval every claim about the row rests on (rules.row_interval)."""
        return ci_bounds(row_interval(self.speedup_ci, self.decision_ci, self.decision_method))

    def significantly_faster(self, rules: Rules) -> bool:
        """Faster than eager by its decision interval (the one rule: rules.faster_than_eager)."""
        return faster_than_eager(self.decision_interval[0], rules.min_speedup)

    @property
    def significantly_slower(self) -> bool:
        return slower_than_eager(self.decision_interval[1])

    def vs_eager(self, word: str = "") -> str:
        """'1.30× (95% CI 1.25–1.35; 1.09–1.55× with the spread between processes)'."""
        return vs_eager(self.speedup, self.speedup_ci, self.decision_ci, self.decision_method, word)

    @property
    def first_call_cache(self) -> str | None:
        """'cold', 'warm (n of n graphs from the cache)', …: what its first call is (units.cache_state),
        and in which folder: '…, machine probed' (its folder seeded: Inductor's CPU ISA probe not
        built again), 'cold, fresh container' (an empty folder: the probe built)."""
        state = units.cache_state(self.cache)
        if state and self.cold_start == "machine probed":
            return f"{state}, machine probed"
        if state == "cold" and self.cold_start:
            return f"cold, {self.cold_start}"
        return state

    @property
    def cold_start(self) -> str | None:
        """Which cold its process started: 'machine probed' (an empty folder seeded with this
        machine's probed folder: Inductor's CPU ISA probe not built again), 'fresh container' (an
        empty folder: the probe built), None (a copy of the main cache, the warm process)."""
        if self.cache_start == units.MACHINE_PROBED_CACHE:
            return "machine probed"
        # "empty", or "empty: seeded, but Inductor built … again" (run/child.py)
        return "fresh container" if (self.cache_start or "").startswith("empty") else None

    @property
    def fresh_first_call_s(self) -> float | None:
        """Its first call as a fresh container pays it: the probe's builds it skipped added back
        (`isa_probe_s`), the footing of the main analysis's cold figure every comparison keeps."""
        if self.first_call_s is None:
            return None
        return self.first_call_s + (self.isa_probe_s or 0.0)

    @property
    def fresh_compile_s(self) -> float | None:
        """A shape setting's compile seconds as a fresh container pays them (`fresh_first_call_s`)."""
        if self.compile_s is None:
            return None
        return self.compile_s + (self.isa_probe_s or 0.0)

    @property
    def steps_to_repay(self) -> int | None:
        be = break_even(self.fresh_first_call_s, self.eager_median_s, self.median_s)
        return be["calls"] if be else None


@dataclass
class RegionRow(StrategyRow):
    """One submodule compiled alone with fullgraph=True, on the inputs it got in one forward."""

    OMIT_NONE = StrategyRow.OMIT_NONE + ("why",)

    module: str | None = None  # its class
    calls_per_forward: int | None = None
    parameters: int | None = None
    fullgraph: bool | None = None  # None: not called during the forward (see note)
    why: str | None = None  # why fullgraph failed

    @property
    def gain_s_per_forward(self) -> float:
        """Eager minus compiled time of this region over one forward of the whole model."""
        if self.eager_median_s is None or self.median_s is None:
            return 0.0
        return (self.eager_median_s - self.median_s) * (self.calls_per_forward or 0)


@dataclass
class RemedyRow(StrategyRow):
    """A compile-time remedy tried in a fresh process with an empty inductor cache
    (experiments/compile_remedies.py): regional compilation or a portable cache loaded first.

    `startup_s` is what a fresh container pays before its first result: the first call, plus the
    load of the cache artifacts where there is one, plus the ISA probe's builds its seeded process
    skipped (`isa_probe_s`); break-even, the verdict and `check` take it, on the footing of the
    cold figure. `probed_startup_s` is what the process paid: a machine's that has compiled
    before, where it was seeded."""

    OMIT_NONE = StrategyRow.OMIT_NONE + (
        "load_s",
        "artifact_bytes",
        "block",
        "blocks",
        "block_share",
    )

    line: str | None = None  # what the user writes
    method: str | None = None
    load_s: float | None = None  # portable cache: load_cache_artifacts alone
    artifact_bytes: int | None = None
    block: str | None = None  # regional: the repeated block's class, its instances, their share
    blocks: int | None = None
    block_share: float | None = None

    @property
    def probed_startup_s(self) -> float | None:
        if self.first_call_s is None:
            return None
        return self.first_call_s + (self.load_s or 0.0)

    @property
    def startup_s(self) -> float | None:
        if self.first_call_s is None:
            return None
        return self.first_call_s + (self.load_s or 0.0) + (self.isa_probe_s or 0.0)

    @property
    def steps_to_repay(self) -> int | None:
        be = break_even(self.startup_s, self.eager_median_s, self.median_s)
        return be["calls"] if be else None

    @property
    def title(self) -> str:
        """How every output names it."""
        if self.name == "regional":
            return f"regional compilation ({self.blocks} × {self.block})"
        if self.name == "portable_cache":
            return "portable cache (load_cache_artifacts, then first call)"
        return self.name or "?"


@dataclass
class CompileRemedies(Record):
    """What cutting the cold start measured (experiments/compile_remedies.py): the remedy rows, the
    artifacts the cold compile saved for the portable cache, what was not tried and why, and the
    other no-edit settings, named with why they were not tried."""

    rows: list[RemedyRow] = field(default_factory=list)
    artifacts: dict[str, Any] | None = None
    not_tried: list[dict] = field(default_factory=list)  # {"remedy", "why"}
    settings: list[dict] = field(default_factory=list)  # {"setting", "why"}
    failed: list[dict] = field(default_factory=list)  # {"strategy", "message"}

    @property
    def measured(self) -> list[RemedyRow]:
        """Rows with a first call and a speed that compiled something: the ones a verdict or a
        check may use (a row whose first call compiled no frame ran eagerly)."""
        return [
            r
            for r in self.rows
            if r.startup_s is not None
            and r.median_s is not None
            and r.extra.get("frames_compiled") != 0
        ]


@dataclass
class Regions(Record):
    """Regional compilation: each submodule at a depth, alone (strategies.run_regions)."""

    depth: int | None = None
    regions: list[RegionRow] = field(default_factory=list)
    automatic: bool | None = None  # tried because the whole model breaks a lot
    spec: dict[str, Any] | None = None
    method: str | None = None


@dataclass
class Strategies(Record):
    """Side-by-side ways of compiling (tcdoctor/experiments/strategies.py); the main analysis is one row."""

    planned: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)
    not_run: list[dict] = field(
        default_factory=list
    )  # {"strategy", "why"}: turned off by an option
    modes: list[StrategyRow] = field(default_factory=list)
    training: list[StrategyRow] = field(default_factory=list)
    step_form: str | None = None  # the function compiled as the whole step (TrainStep.step_form)
    dynamic: list[StrategyRow] = field(default_factory=list)
    regions: Regions | None = None
