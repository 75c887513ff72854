"""The serving section (issue 55): the traffic replayed one request at a time in fresh processes,
eager and compiled, the compiles it triggered, the warm-up proven to cover them, a restart, the
shape strategies, host time and threads, and the ahead-of-time part.

Filled by run/assemble.py from the serving stage's one event (run/serving/, one stage
record per part; the methods are in docs/serving.md); absent (`Report.serving` None, not
written) when the target gave no traffic and `--traffic` was not given, so every report without
traffic is unchanged. Seconds, never milliseconds, in the JSON.

Percentiles: the one rule of sections/percentiles.py (`stats.nearest_rank` over the requests
served; a request the model rejected has no latency: null at its index), shared with the
generation section. Each side's p50/p90/p99/max are derived properties, written to the JSON for
machines that read it and recomputed on load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ... import units
from ..processes.paired import Interval
from ..record import Record
from .generation import GenerationSection
from .percentiles import Percentiles


@dataclass
class TrafficInfo(Record):
    """What was replayed: the traffic's source ('list', 'generator', 'distribution', or 'inputs'
    when the target gave none and its inputs and variants were replayed), N, its seed and
    description, how many distinct shapes its requests had, the buckets it gives."""

    source: str | None = None
    requests: int | None = None
    seed: int | None = None
    description: str | None = None
    distinct_shapes: int | None = None
    buckets: dict[str, list[int]] | None = None
    method: str | None = None


@dataclass
class TrafficCompile(Record):
    """One compile during the traffic (a CompilationMetrics entry): the request that triggered it,
    its shapes, the frame's compile seconds, the guard that failed (PyTorch's words; null for a
    frame's first compile), its kind ('compile', 'recompile', 'limit': recompile_limit was hit and
    the request ran on the eager fallback, or 'failed': the compile raised, nothing compiled)."""

    request: int | None = None
    shapes: str | None = None
    seconds: float | None = None
    reason: str | None = None
    compile_id: str | None = None
    kind: str | None = None
    function: str | None = None
    fail_type: str | None = None
    fail_reason: str | None = None


@dataclass
class ServedSide(Percentiles, Record):
    """One side of a replay (eager or compiled): per request its latency (null where it was not
    served), host and device time (CUDA only), shapes; the compiles, the requests served by the
    eager fallback after `recompile_limit`, the errors, why it stopped early."""

    DERIVED = ("p50_s", "p90_s", "p99_s", "max_s")

    latencies_s: list[float | None] = field(default_factory=list)
    host_s: list[float | None] | None = None
    device_s: list[float | None] | None = None
    shapes: list[str] = field(default_factory=list)
    compiles: list[TrafficCompile] = field(default_factory=list)
    compile_s: float | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    fallback_requests: list[int] = field(default_factory=list)
    recompile_limit: int | None = None
    limit_hit: dict[str, Any] | None = None
    stopped: str | None = None
    requests: int | None = None
    wall_s: float | None = None
    method: str | None = None


@dataclass
class Replay(Record):
    """The traffic served eager, then compiled, in one fresh process (a server's cold start)."""

    method: str | None = None
    process: str | None = None
    cache_start: str | None = None
    eager: ServedSide | None = None
    compiled: ServedSide | None = None


@dataclass
class Proof(Percentiles, Record):
    """The warm-up's proof: the traffic replayed after the warm-up under
    set_stance('fail_on_recompile') in a fresh process; proven when none would have compiled."""

    DERIVED = ("p50_s", "p99_s")

    proven: bool | None = None
    why: str | None = None
    compiled_requests: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    latencies_s: list[float | None] = field(default_factory=list)
    requests: int | None = None
    method: str | None = None


@dataclass
class Startup(Record):
    """The user's own warm-up (`Traffic(warmup=...)`) as the replay process served it before the
    traffic: its requests, their latencies and seconds in all, its compiles (the server's start-up
    cost, not the traffic's), the requests the model rejected."""

    requests: int | None = None
    shapes: list[str] = field(default_factory=list)
    latencies_s: list[float | None] = field(default_factory=list)
    seconds: float | None = None
    compiles: list[TrafficCompile] = field(default_factory=list)
    compile_s: float | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    limit_hit: dict[str, Any] | None = None
    method: str | None = None

    @property
    def made(self) -> int:
        """The compiles that made a graph."""
        return sum(1 for c in self.compiles if c.kind in MADE)


MADE = ("compile", "recompile")  # the kinds of compile that made a graph


@dataclass
class Warmup(Record):
    """The warm-up: the user's own (`source` "yours", `user` its start-up figures) or the one
    derived from the traffic's compiles (one request per compile; with the user's, the requests
    that still compiled after it), its start-up script, its time from an empty cache and from a
    warm one, and its proof (of the user's warm-up where given, else of the derived one)."""

    OMIT_NONE = ("source", "user", "script_path")

    source: str | None = None
    user: Startup | None = None
    requests: list[int] = field(default_factory=list)
    signatures: list[dict[str, Any]] = field(default_factory=list)
    script: str | None = None
    script_path: str | None = None  # where `analyze` wrote it (beside the JSON report)
    seconds_cold: float | None = None
    seconds_warm: float | None = None
    proof: Proof | None = None
    method: str | None = None


@dataclass
class Restart(Record):
    """A restart: the time from a fresh process's spawn to its first served request (from a copy
    of the replay's cache), and PyTorch's cache counters over its warm-up."""

    first_request_s: float | None = None
    import_s: float | None = None
    build_s: float | None = None
    caches: dict[str, dict[str, int]] = field(default_factory=dict)
    metrics: dict[str, dict[str, int]] | None = None
    hit: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    compiled_again: dict[str, Any] | None = None
    method: str | None = None


@dataclass
class ServeStrategy(Percentiles, Record):
    """One shape strategy replayed on the traffic in a fresh process of its own: its steady
    latencies (p50, p99), its cold compiles, its warm-up cost, the requests the eager fallback
    served, and its interval against the reference (run/serving/section.py `intervals`)."""

    DERIVED = ("p50_s", "p99_s")
    OMIT_NONE = ("not_measured", "cold_latencies_s", "compile_kwargs", "cache_start", "stopped")

    name: str | None = None
    label: str | None = None
    latencies_s: list[float | None] = field(default_factory=list)
    cold_latencies_s: list[float | None] | None = None
    compiles: int | None = None
    compile_events: list[TrafficCompile] = field(default_factory=list)
    compile_s: float | None = None
    warmup_s: float | None = None
    fallback_requests: list[int] = field(default_factory=list)
    limit_hit: dict[str, Any] | None = None
    recompile_limit: int | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    interval: Interval | None = None
    compile_kwargs: dict[str, str] | None = None
    cache_start: str | None = None
    stopped: str | None = None
    not_measured: str | None = None
    method: str | None = None


@dataclass
class HostRow(Record):
    """Median host and wall (and on CUDA device) time per request, and the most requests per
    second one Python process can drive (1 / median host time)."""

    OMIT_NONE = ("outputs_equal", "compared", "errors")

    host_s: float | None = None
    wall_s: float | None = None
    device_s: float | None = None
    max_rps: float | None = None
    requests: int | None = None
    outputs_equal: bool | None = None  # skip_guard_eval_unsafe's row: against the guarded run
    compared: int | None = None
    errors: list[dict[str, Any]] | None = None


@dataclass
class Host(Record):
    """Host against device time: eager, compiled, and compiled with skip_guard_eval_unsafe."""

    eager: HostRow | None = None
    compiled: HostRow | None = None
    skip_guards: HostRow | None = None
    method: str | None = None


@dataclass
class Threads(Record):
    """The traffic served by N threads of one process: whether it ran, outputs against eager's,
    requests/s against one thread, what failed."""

    n: int | None = None
    requests: int | None = None
    served: int | None = None
    ok: bool | None = None
    outputs_equal: bool | None = None
    mismatches: list[int] = field(default_factory=list)
    same_as_one_thread: bool | None = None
    rps_one: float | None = None
    rps_n: float | None = None
    compiles: int | None = None
    compile_reasons: list[str] = field(default_factory=list)  # PyTorch's, per compile (5 at most)
    error: str | None = None
    errors: list[str] = field(default_factory=list)
    method: str | None = None


@dataclass
class Aot(Record):
    """The ahead-of-time part (probes/aot.py `finish`, run/serving/aot.py): the export and the
    AOTInductor build in one fresh process, the package loaded and the traffic served through it
    in another. Its fields in the order the probe writes them (`_empty`); the serve process's
    extras (errors, stopped, host_s, device_s, a traffic's error) stay in `extra`, in theirs.
    `not_measured` names the first step that did not run and why (export, package, serve,
    numerics)."""

    OMIT_NONE = ("method",)

    exported: bool = False
    findings: list[dict] = field(default_factory=list)  # draft_export's, one per failure
    export_s: float | None = None
    draft_export_s: float | None = None
    compile_s: float | None = None
    package_bytes: int | None = None
    build_isa_probe_s: float | None = None
    build_isa_probe_builds: int | None = None
    isa_probe_s: float | None = None
    isa_probe_builds: int | None = None
    load_s: float | None = None
    first_request_s: float | None = None
    latencies_s: list[float | None] = field(default_factory=list)  # None: not served
    p50_s: float | None = None
    p99_s: float | None = None
    numerics: dict | None = None  # the saved requests' outputs against eager's (status, passed)
    dynamic_shapes: list[dict] = field(default_factory=list)
    example_request: int | None = None
    not_measured: dict[str, str] = field(default_factory=dict)
    method: str | None = None

    @property
    def served(self) -> bool:
        """Some request was served through the package (its latencies exist)."""
        return bool(self.latencies_s)

    @property
    def unexported(self) -> tuple[str, str] | None:
        """(where, why) it did not export: the first finding's file:line ('' where none) and
        PyTorch's words, else why export was not tried; None when it exported."""
        if self.exported:
            return None
        f = (self.findings or [{}])[0]
        where = units.file_line(f.get("file"), f.get("line")) if f.get("file") else ""
        return where, f.get("why") or self.not_measured.get("export") or "not exported"

    @property
    def unserved_why(self) -> str | None:
        """Why no package served the traffic: not built, or its serving process's failure."""
        return self.not_measured.get("package") or self.not_measured.get("serve")

    @property
    def numerics_status(self) -> str | None:
        return (self.numerics or {}).get("status")


@dataclass
class OperatingModel(Record):
    """The verdict's operating model for this traffic (verdict/serving.py): `model` ("eager",
    "jit" with the proven warm-up, "aot", or null where nothing decides), its one line, the
    figures behind it (one line each), the strategy that serves the traffic best with its
    interval (or why none is named), and how it relates to the report's headline."""

    model: str | None = None
    text: str = ""
    figures: list[str] = field(default_factory=list)
    strategy: str | None = None
    strategy_text: str = ""
    relation: str = ""


@dataclass
class Serving(Record):
    """The serving section; a part that was not measured is null (or absent from `strategies`)
    and says why in `not_measured`."""

    OMIT_NONE = ("generation",)

    traffic: TrafficInfo | None = None
    replay: Replay | None = None
    warmup: Warmup | None = None
    restart: Restart | None = None
    strategies: list[ServeStrategy] = field(default_factory=list)
    host: Host | None = None
    threads: Threads | None = None
    aot: Aot | None = None
    process_spread: float | None = None
    not_measured: dict[str, str] = field(default_factory=dict)
    # a tcdoctor.Generation's parts (issue 60): written only for one
    generation: GenerationSection | None = None

    @property
    def compiled(self) -> ServedSide | None:
        """The replay's compiled side (None: not measured)."""
        return self.replay.compiled if self.replay else None

    @property
    def p99_s(self) -> float | None:
        """The compiled side's p99 under traffic, compile stalls included."""
        return self.compiled.p99_s if self.compiled else None

    @property
    def traffic_compiles(self) -> int | None:
        """The compiles during traffic that made a graph (the user's warm-up's are start-up
        cost, not counted); None where the compiled side was not replayed."""
        side = self.compiled
        return None if side is None else sum(1 for c in side.compiles if c.kind in MADE)

    @property
    def proven(self) -> bool | None:
        """Whether the warm-up's proof passed (None: no proof)."""
        proof = self.warmup.proof if self.warmup else None
        return proof.proven if proof else None
