"""Typed report sections: what an analysis found, as objects with their derived figures.

Each section of the JSON report is a `Record` dataclass here. The phase children still send
plain dicts over the pipe (their wire format); `Report.from_dict` (tcdoctor/report/model.py) reads the
assembled dict into these classes once, and everything after that — the verdict, the tried-fix
advice, `check`, `diff` and every renderer — reads attributes, not string keys.

The base class (reading, writing, the JSON Schema and the check of a file against it, all from
the fields' annotations) is `Record` in report/record.py; the rules the derived figures apply
(`Runtime.significantly_faster(rules)`, `Guards.overhead_fraction`, break-even) are in
report/rules.py. A section here is its fields, its derived figures, and how an older file's keys map
onto it (`upgrade`); those listed in a class's `DERIVED` are also written to the JSON for machines
that read it, and ignored on load. Keys a section does not model are kept in `extra`.

Torch-free, like everything `tcdoctor report` imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import units
from . import runtime_processes
from .attribution import DriftOrigin, MemoryAttribution
from .record import Record
from .rules import (
    ACROSS_WORDS,
    break_even,
    cold_warm_ratio,
    faster_than_eager,
    guard_share,
    row_interval,
    slower_than_eager,
)

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


def _ci(ci: list | tuple | None) -> tuple[float | None, float | None]:
    return (ci[0], ci[1]) if ci else (None, None)


def _vs_eager(
    speedup: float | None,
    own_ci: list | None,
    decision_ci: list | None,
    decision_method: str | None,
    word: str = "",
) -> str:
    """'1.30× faster (95% CI 1.25–1.35; 1.09–1.55× with the spread between processes)': a row's
    speed as its process measured it, and the decision interval its claims rest on
    (rules.row_decision_interval) where that differs; as before for a row without one."""
    text = units.ratio(speedup, own_ci, word)
    if decision_method is None or speedup is None or (decision_ci or None) == (own_ci or None):
        return text
    across = (
        f"{units.span(decision_ci)} {ACROSS_WORDS}"
        if decision_ci
        else "not judged across processes"
    )
    return text[:-1] + f"; {across})" if text.endswith(")") else f"{text} ({across})"


# ------------------------------------------------------------------------------------- sections


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


@dataclass
class Runtime(Record):
    """Eager vs compiled, interleaved and paired (probes/timing.py)."""

    OMIT_NONE = (
        "not_measured",
        "samples_per_round",
        "processes",
        "regimes",
        "spread",
        "across_method",
        "prediction_interval",
        "sequence",
        "undecided_why",
        "load",
        "modes",
    )

    # the cold process's own timing; `speedup` and `speedup_ci` are across processes
    # (report/runtime_processes.py), each process's figures in `processes`
    eager: Timing = field(default_factory=Timing)
    compiled: Timing = field(default_factory=Timing)
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    samples: int | None = None
    ci_level: float | None = None
    ci_method: str | None = None
    method: str | None = None
    budget_s: float | None = None
    calls_per_sample: int | None = None
    samples_per_round: int | None = None
    processes: list[dict] | None = None
    regimes: list[dict] | None = None
    spread: list[float] | None = None
    across_method: str | None = None
    # what another run of the script may see (nothing decides on it); `speedup_ci` decides
    prediction_interval: list[float] | None = None
    # how many processes timed and why they stopped (runtime_processes.decided, run/launcher.py)
    sequence: dict[str, Any] | None = None
    undecided_why: str | None = None  # why the processes cannot decide, whatever the interval
    # the load on the processes decided on, per pair (runtime_processes.under_load): loaded_pairs,
    # pairs, processes_loaded, processes, sustained, text ("timed under load: N of M pairs loaded")
    load: dict[str, Any] | None = None
    # two modes within a regime (runtime_processes.modes): [{"regime", "modes": [{processes,
    # speedup}, …]}]
    modes: list[dict] | None = None
    warmup_calls: int | None = None
    wall_s: float | None = None
    recompiles_during_timing: int | None = None
    still_compiling: bool | None = None
    raw: dict[str, list[float]] | None = None
    not_measured: str | None = None

    @property
    def ci_low(self) -> float | None:
        return _ci(self.speedup_ci)[0]

    @property
    def ci_high(self) -> float | None:
        return _ci(self.speedup_ci)[1]

    def significantly_faster(self, rules: dict) -> bool:
        return self.claim(rules) == "faster"

    def claim(self, rules: dict) -> str:
        """faster / slower / same / below / undecided, from the decision interval (in every
        allocator regime when the processes fell in two: runtime_processes.claim; "same" within
        RULES' equivalence_margin)."""
        return runtime_processes.overall_claim(
            self.speedup_ci,
            self.regimes,
            self.undecided_why,
            rules["min_speedup"],
            rules.get("equivalence_margin", runtime_processes.EQUIVALENCE_MARGIN),
        )

    @property
    def least_favourable_medians(self) -> tuple[float | None, float | None]:
        """(eager, compiled) medians of the process with the lowest speedup: what per-call gains
        and the break-even are computed from, so a lucky process never shortens them."""
        worst = runtime_processes.least_favourable(self.processes or [])
        if worst is None:
            return self.eager.median_s, self.compiled.median_s
        return worst["eager_median_s"], worst["compiled_median_s"]

    @property
    def significantly_slower(self) -> bool:
        return self.claim({"min_speedup": 1.0}) == "slower"


@dataclass
class CompileGraphs(Record):
    """Where the compile time goes: one row per frame the cold first call compiled, largest cold
    seconds first (probes/compile_graphs.py), joined with the warm process's seconds and the
    steady-state runs per call (report/compile_joins.py).

    A row stays a dict of the probe's keys (compile_id, function, file, line, ops, cold_s, warm_s,
    runs_per_call, median_s_per_call, unused_in_steady_state, …); `check` holds the rows' sum beside
    the compile part of the first call (`coverage`).
    """

    OMIT_NONE = ("regions_not_in_table", "time_scale")

    rows: list[dict] = field(default_factory=list)
    check: dict[str, Any] = field(default_factory=dict)
    method: str | None = None
    regions_not_in_table: list[str] | None = (
        None  # ran in steady state, not compiled by the first call
    )
    # how the profiled time/call was scaled to the unprofiled call (compile_joins.scale_to_call)
    time_scale: dict[str, Any] | None = None


@dataclass
class CompileTime(Record):
    """First compiled call, cold cache (probes/first_call.py) and warm cache (a second process).

    The cold first call is stored once (`first_call_s`, its cache counters in `cache`); `cold_s`
    and `cold_cache` are the names the verdict and schema-1 readers use, written as derived keys.
    `graphs` (where the compile time goes, frame by frame) is written only when measured, so a
    report saved before it existed re-renders unchanged.
    """

    DERIVED = ("cold_s", "cold_cache")
    OMIT_NONE = ("not_measured", "warm_not_measured", "graphs", "remedies")

    first_call_s: float | None = None
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


@dataclass
class Memory(Record):
    """Peak memory of one eager and one compiled call, and of the compile (probes/memory.py)."""

    OMIT_NONE = ("not_measured", "attribution")

    eager_peak_bytes: int | None = None
    compiled_peak_bytes: int | None = None
    compile_peak_bytes: int | None = None
    compile_peak_method: str | None = None
    method: str | None = None
    ratio: float | None = None
    eager: dict[str, Any] | None = None
    compiled: dict[str, Any] | None = None
    not_measured: str | None = None
    attribution: MemoryAttribution | None = None  # where the growth is (report/attribution.py)


@dataclass
class Numerics(Record):
    """Compiled vs eager against an fp64 reference, output by output (probes/numerics.py)."""

    OMIT_NONE = ("not_measured", "drift")

    passed: bool | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    min_cosine: float | None = None
    compared: int | None = None
    tensors_compared: int | None = None
    failed_outputs: list[str] | None = None
    not_compared: list[Any] | None = None
    outputs: list[dict] | None = None
    fp64_reference: bool | None = None
    fp64_unavailable_why: str | None = None
    rng: dict[str, Any] | None = None
    state: str | None = None
    method: str | None = None
    not_measured: str | None = None
    drift: DriftOrigin | None = None  # where the numbers drift (report/attribution.py)


@dataclass
class GraphBreak(Record):
    """One unique graph break: where the user's code reaches it, why, whose code it is in."""

    OMIT_NONE = (
        "cost_s_per_call",
        "cost_fraction",
        "profiled_cost_s_per_call",
        "cost_method",
        "cost_not_measured",
        "gain_s_per_call",
        "gain_fraction",
        "gain_source",
        "gain_method",
        "gain_fix",
        "skipped_frame",
    )

    id: str | None = None
    reason: str | None = None
    file: str | None = None
    line: int | None = None
    function: str | None = None
    code: str | None = None
    occurrences: int = 1
    origin: str | None = None  # user / library / pytorch / step
    origin_text: str | None = None
    library: str | None = None
    site: dict[str, Any] | None = None
    frame_skipped: bool | None = None
    # the frame Dynamo skipped, when frame_skipped: {"function": qualified name, "file", "line" (its
    # def), "entry": True when it is the first frame of the call (the model's forward, the step)}
    skipped_frame: dict[str, Any] | None = None
    in_loop: bool | None = None
    explanation: str | None = None
    hints: list[str] | None = None
    gb_id: Any = None
    doc_url: str | None = None
    full_reason: str | None = None
    user_stack: list[dict] | None = None
    cost_s_per_call: float | None = None
    cost_fraction: float | None = None
    profiled_cost_s_per_call: float | None = None
    cost_method: str | None = None
    cost_not_measured: str | None = None
    # What fixing it gains per call: "tried" (measured by a fix tried in a fresh process, `gain_fix`)
    # or "bound" (its cost minus the eager ops that would still run; probes/break_cost.py). Never < 0.
    gain_s_per_call: float | None = None
    gain_fraction: float | None = None
    gain_source: str | None = None
    gain_method: str | None = None
    gain_fix: str | None = None

    @property
    def where(self) -> str:
        return f"{self.file or '?'}:{self.line or '?'}"

    @property
    def users(self) -> bool:
        """The break is in the user's own code: theirs to edit."""
        return (self.origin or "user") == "user"

    @property
    def site_text(self) -> str:
        """' — inside torch _detect_is_causal_mask (transformer.py:1245), PyTorch itself': where a
        break in code the user did not write lies; '' for the user's own code."""
        if not self.origin or self.origin == "user":
            return ""
        site = self.site or {}
        called = site.get("called")
        if called:  # the user's line calls an API Dynamo cannot trace (loss.backward(), zero_grad)
            return (
                f" — a call into {self.library or 'torch'} {called.get('function') or ''}, "
                f"{self.origin_text}"
            )
        where = units.file_line(site.get("file"), site.get("line"))
        inside = f"{self.library or ''} {site.get('function') or ''} ({where})"
        return f" — inside {inside}, {self.origin_text}".replace("  ", " ")

    @property
    def gain_text(self) -> str:
        """What fixing the break gains per call, and how that is known:
        'fixing it gains 12 µs per call, 3% of a compiled call (measured: tried `…`)' or
        'fixing it gains at most 41 µs per call, 38% (a bound); 3.65 ms outside graphs'."""
        gain, share, spent = self.gain_s_per_call, self.gain_fraction, self.cost_s_per_call
        cost = f"; {units.seconds(spent)} per call outside graphs" if spent is not None else ""
        if gain is None:
            return f"time outside graphs: {units.seconds(spent)} per call" if cost else ""
        if self.gain_source == "tried":
            return (
                f"fixing it gains {units.seconds(gain)} per call, {units.percent(share)} of a "
                f"compiled call (measured: tried `{self.gain_fix}`){cost}"
            )
        return (
            f"fixing it gains at most {units.seconds(gain)} per call, {units.percent(share)} "
            f"(a bound){cost}"
        )

    @property
    def skipped_text(self) -> str | None:
        """'frame skipped: Detector.forward (nms_loop.py:36), the call's entry, runs eagerly'; the
        short form when the frame is not named (older reports); None when no frame was skipped."""
        if not self.frame_skipped:
            return None
        sf = self.skipped_frame or {}
        if not sf.get("function"):
            return "frame skipped: runs eagerly"
        entry = ", the call's entry," if sf.get("entry") else ""
        where = units.file_line(sf.get("file"), sf.get("line"))
        return f"frame skipped: {sf['function']} ({where}){entry} runs eagerly"


@dataclass
class Graphs(Record):
    """Graphs of one call: `count` from the compile you run (`source`; report/counts.py), explain's beside it."""

    OMIT_NONE = ("not_measured", "source", "explain_run_count", "per_graph_source")

    count: int | None = None
    per_graph: list[dict] = field(default_factory=list)
    explain_op_count: int | None = None
    not_measured: str | None = None
    source: str | None = None
    explain_run_count: int | None = None
    per_graph_source: str | None = None


@dataclass
class GraphBreaks(Record):
    """Graph breaks as Dynamo logged them on one compiled call (probes/graph_breaks.py): the compile
    you run (`source`), with explain's run kept as `explain_run_count` (report/counts.py)."""

    OMIT_NONE = ("not_measured", "source", "explain_run_count")

    count: int | None = None
    unique: list[GraphBreak] = field(default_factory=list)
    skipped_frames: int | None = None
    definition: str | None = None
    dynamo_counters_graph_break: int | None = None
    explain_graph_break_count: int | None = None
    unlogged_fallbacks: list[Any] | None = None
    not_measured: str | None = None
    source: str | None = None
    explain_run_count: int | None = None


@dataclass
class Recompile(Record):
    """One recompile: which function, on which input variant, which guard failed, and when:
    `phase` "first call" (inside the first call, e.g. a helper called again from a loop) or
    "variants" (a later call with one of the workload's variants)."""

    OMIT_NONE = ("phase",)

    function: str | None = None
    reason: str | None = None
    raw_reason: str | None = None
    variant: str | None = None
    variant_index: int | None = None
    compile_s: float | None = None
    call_wall_s: float | None = None
    fail_type: str | None = None
    # the recompiled function's file and first line, when in the user's files (for annotations)
    file: str | None = None
    line: int | None = None
    phase: str | None = None


@dataclass
class Recompiles(Record):
    """Recompiles in the first call and over the workload's input variants (probes/recompiles.py):
    `count` is both, `first_call_count` the first call's share (None: not counted, older reports);
    `recompile_time_s` is the variants' only (the first call's are inside the cold first call)."""

    OMIT_NONE = ("not_measured", "first_call_count")

    count: int | None = None
    first_call_count: int | None = None
    events: list[Recompile] = field(default_factory=list)
    limit: int | None = None
    limit_hit: bool | None = None
    limit_messages: list[str] | None = None
    recompile_time_s: float | None = None
    sequence_wall_s: float | None = None
    variants: int | None = None
    variant_errors: list[dict] | None = None
    source: str | None = None
    state: str | None = None
    not_measured: str | None = None


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
    )

    name: str | None = None
    source: str | None = None
    first_call_s: float | None = None
    median_s: float | None = None
    eager_median_s: float | None = None
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    samples: int | None = None
    peak_bytes: int | None = None
    eager_peak_bytes: int | None = None
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
        return _ci(row_interval(self.speedup_ci, self.decision_ci, self.decision_method))

    def significantly_faster(self, rules: dict) -> bool:
        """Faster than eager by its decision interval (the one rule: rules.faster_than_eager)."""
        return faster_than_eager(self.decision_interval[0], rules["min_speedup"])

    @property
    def significantly_slower(self) -> bool:
        return slower_than_eager(self.decision_interval[1])

    def vs_eager(self, word: str = "") -> str:
        """'1.30× (95% CI 1.25–1.35; 1.09–1.55× with the spread between processes)'."""
        return _vs_eager(
            self.speedup, self.speedup_ci, self.decision_ci, self.decision_method, word
        )

    @property
    def first_call_cache(self) -> str | None:
        """'cold', 'warm (n of n graphs from the cache)', …: what its first call is (units.cache_state)."""
        return units.cache_state(self.cache)

    @property
    def steps_to_repay(self) -> int | None:
        be = break_even(self.first_call_s, self.eager_median_s, self.median_s)
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

    `startup_s` is what that process pays before its first result: the first call, plus the load
    of the cache artifacts where there is one; break-even is taken of it."""

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
    def startup_s(self) -> float | None:
        if self.first_call_s is None:
            return None
        return self.first_call_s + (self.load_s or 0.0)

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
    dynamic: list[StrategyRow] = field(default_factory=list)
    regions: Regions | None = None


@dataclass
class Patch(Record):
    """A source patch for a graph break in the user's own file (experiments/rewrite.py plans it,
    experiments/patches.py proves it on a copy): where, which rule and safety class, the diff, and
    each check of the proof. `verified` only when every check passed."""

    rule: str | None = None  # TCD101 ...
    family: str | None = (
        None  # leftover-graph-break / guard-logging / guard-check / tensor-cond / custom-op
    )
    safety: str | None = None  # safe (behaviour unchanged eager and compiled) / unsafe
    title: str | None = None
    note: str | None = None  # what the user must know (what compiled runs skip, ...)
    file: str | None = None  # relative to the target's folder, as the diff names it
    line: int | None = None
    sha256: str | None = None  # of the file the patch was planned on (`tcdoctor fix` checks it)
    diff: str | None = (
        None  # unified, a/ b/ paths: `git apply` / `patch -p1` from the target's folder
    )
    observed: dict[str, Any] | None = (
        None  # what the line read and produced eagerly (a custom op's fake)
    )
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {passed, detail}
    verified: bool = False
    failed: list[str] = field(default_factory=list)  # the checks that failed


@dataclass
class FixRow(Record):
    """A fix that needs no source edit, tried in a fresh process or read off a strategy row
    (tcdoctor/experiments/fixes.py, judged in tcdoctor/verdict/tried.py): the figures it addresses before and after, and what that showed."""

    OMIT_NONE = (
        "cheap",
        "seconds",
        "source",
        "spec",
        "cache_start",
        "patch",
        "decision_ci",
        "decision_method",
    )

    name: str | None = None
    kind: str | None = (
        None  # config / stance / env / numerics / compiled_autograd / dynamic / regions
    )
    fix: str | None = None  # the line a user would write
    addresses: list[str] = field(default_factory=list)
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] | None = None
    outcome: str | None = None  # helps / no effect / hurts / fails ...
    why: str | None = None
    cheap: dict[str, Any] | None = None
    seconds: float | None = None
    source: str | None = None
    spec: dict[str, Any] | None = None
    cache_start: str | None = (
        None  # what its child's inductor cache held at start (run/launcher.py)
    )
    # the speedup after the fix with the spread between processes, corrected for the candidate
    # rows (rules.row_decision_interval; set at assembly by verdict/tried.py)
    decision_ci: list[float] | None = None
    decision_method: str | None = None
    patch: Patch | None = None  # a source patch's plan and proof (kind "patch")

    @property
    def summary(self) -> str:
        """'1 breaks → 0, 0.24× → 0.91× (95% CI 0.88–0.95)': the figures it addresses, before and after."""
        b, a = self.before or {}, self.after or {}
        parts = [
            f"{b[k]} {unit} → {a[k]}"
            for k, unit in (("graph_breaks", "breaks"), ("recompiles", "recompiles"))
            if b.get(k) is not None and a.get(k) is not None
        ]
        if self.kind == "env" and b.get("faults_per_call") is not None:
            before_f, after_f = (
                x if x is None else round(x)
                for x in (b["faults_per_call"], a.get("faults_per_call"))
            )
            parts.append(
                f"{units.grouped(before_f)} page faults per compiled call → {units.grouped(after_f)}"
            )
        if b.get("speedup") is not None and a.get("speedup") is not None:
            parts.append(f"{units.ratio(b['speedup'])} → {self.vs_eager()}")
        state = units.cache_state(a.get("cache"))
        if state and a.get("first_call_s") is not None:
            where = " in the warm process" if self.cache_start == units.WARM_PROCESS_CACHE else ""
            parts.append(f"first call {units.seconds(a['first_call_s'])}, {state}{where}")
        return ", ".join(parts)

    @property
    def measured(self) -> bool:
        """Run with the real backend in a fresh process: its speed after the fix is a measurement."""
        return self.source is None and (self.after or {}).get("speedup") is not None

    @property
    def decision_interval(self) -> tuple[float | None, float | None]:
        """The interval every claim about the speed after the fix rests on (rules.row_interval)."""
        own = (self.after or {}).get("speedup_ci")
        return _ci(row_interval(own, self.decision_ci, self.decision_method))

    def significantly_faster(self, rules: dict) -> bool:
        """With the fix applied, compiled is significantly faster than eager by the row's decision
        interval (the one rule: rules.faster_than_eager)."""
        return (
            self.measured
            and self.applicable
            and faster_than_eager(self.decision_interval[0], rules["min_speedup"])
        )

    @property
    def applicable(self) -> bool:
        """A fix a user may apply: any tried switch, but a source patch only once verified (a
        patch that failed its proof earns no "apply it" and no measured gain)."""
        return self.patch is None or self.patch.verified

    def vs_eager(self, word: str = "") -> str:
        """The speed after the fix: '1.30× (95% CI 1.25–1.35; 1.09–1.55× with the spread between
        processes)'."""
        a = self.after or {}
        return _vs_eager(
            a.get("speedup"), a.get("speedup_ci"), self.decision_ci, self.decision_method, word
        )

    @property
    def gain_fraction(self) -> float | None:
        """Share of a compiled call the fix saves, from the speedups before and after (each paired
        against eager in its own process, so process-to-process speed differences cancel); ≥ 0."""
        b, a = (self.before or {}).get("speedup"), (self.after or {}).get("speedup")
        if not self.measured or not self.applicable or not b or not a:
            return None
        return max(0.0, 1.0 - b / a)


@dataclass
class Ablation(Record):
    """eager / aot_eager / the real backend side by side, and the layer a loss or drift is in."""

    rows: list[StrategyRow] = field(default_factory=list)
    layer: str | None = None


@dataclass
class Advice(Record):
    topic: str = ""
    text: str = ""
    evidence: str = ""


@dataclass
class Verdict(Record):
    """The decision, its reasons and the advice (tcdoctor/verdict/). `decision` is one of
    "compile", "compile-after-fixes", "dont-compile" and "cant-tell" (Can't tell yet: the speed
    undecided at this precision), or null when there is none."""

    decision: str | None = None
    reasons: list[str] = field(default_factory=list)
    advice: list[Advice] = field(default_factory=list)
    recommendations: dict[str, dict] = field(default_factory=dict)
    break_even_calls: int | None = None
    break_even: dict[str, Any] = field(default_factory=dict)
    rules: dict[str, float] = field(default_factory=dict)


@dataclass
class RankRow(Record):
    """One rank of a distributed run, from its own single-process report (report/distributed.py
    `rank_row`); `merge` joins these rows across nodes' reports and every cross-rank figure of
    `Distributed` is recomputed from them."""

    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    finished: bool | None = None
    graphs: int | None = None
    graph_breaks: int | None = None
    recompiles: int | None = None
    guards: int | None = None
    first_call_s: float | None = None
    warm_first_call_s: float | None = None
    compile_s: float | None = None
    step_median_s: float | None = None
    step_ci_s: list[float] | None = None
    eager_step_median_s: float | None = None
    speedup: float | None = None
    peak_bytes: int | None = None
    eager_peak_bytes: int | None = None
    graph_ops: list[int | None] | None = None  # ops per graph
    break_reasons: list[list] | None = None  # [reason, file, line], sorted so ranks compare equal
    recompile_reasons: list[str] | None = None
    inputs: dict[str, Any] | None = None
    phases: dict[str, float] | None = None
    errors: list[dict] | None = None
    ddp: dict[str, Any] | None = None  # what the rank's DDP wrapper and DDPOptimizer recorded


@dataclass
class Divergence(Record):
    """Ranks that differ in one respect (graphs, breaks, guards, ...): each is a named hang risk."""

    kind: str | None = None
    what: str | None = None
    values: dict[str, Any] = field(default_factory=dict)  # rank (as text) -> its value
    text: str | None = None
    risk: str | None = None


@dataclass
class Distributed(Record):
    """A --nproc/--nnodes run's ranks and what their differences mean (report/distributed.py).

    Everything after `not_measured` is computed from `ranks` by `report.distributed.finish`, so
    `tcdoctor merge` can join several nodes' rows and recompute it; the fields are in the order
    `section` writes them. `nodes` and `merged_from` are set by `merge` only.
    """

    OMIT_NONE = ("nodes", "merged_from")

    world_size: int | None = None
    backend: str | None = None
    timeout_s: float | None = None
    ranks: list[RankRow] = field(default_factory=list)
    timeout_source: str | None = None
    analysis_pg_timeout_s: float | None = None
    launcher: str | None = None
    node_rank: int | None = None
    nnodes: int | None = None
    nproc_per_node: int | None = None
    report_rank: int | None = None
    not_measured: dict[str, str] | None = None
    compile_skew_s: float | None = None
    compile_time_skew_s: float | None = None
    mixed_cache_skew_s: float | None = None
    compile_skew_fraction: float | None = None  # of timeout_s
    mixed_cache_skew_fraction: float | None = None
    divergences: list[Divergence] = field(default_factory=list)
    slowest: dict[str, dict] = field(default_factory=dict)  # phase -> rank, seconds, fastest_s
    ddp: dict[str, Any] | None = None
    missing_ranks: list[int] = field(default_factory=list)
    method: dict[str, str] = field(default_factory=dict)
    nodes: list[str] | None = None
    merged_from: int | None = None


@dataclass
class TorchTrace(Record):
    """PyTorch's structured compile logs (TORCH_TRACE) of the run and tlparse's report of them
    (run/tlparse.py `attach`). `tlparse` is tlparse's outcome as recorded (None: not installed
    or no log), kept as a dict because a failed start records fewer keys than a run."""

    dir: str | None = None
    logs: list[str] = field(default_factory=list)
    attach: str | None = None  # the log to attach to a PyTorch issue
    command: str | None = None  # the tlparse command line that renders the logs
    tlparse: dict[str, Any] | None = None
    note: str | None = None

    @property
    def index(self) -> str | None:
        """tlparse's index.html, when it ran and wrote one."""
        return (self.tlparse or {}).get("index")

    @property
    def tlparse_error(self) -> str | None:
        return (self.tlparse or {}).get("error")
