"""A distributed run: each rank's row (`RankRow`) and its DDP figures (`DdpSummary`), what diverges
between ranks (`Divergence`), the slowest rank of a phase (`SlowestRank`), the section
(`Distributed`), and the structured compile logs (`TorchTrace`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..keyed import Keyed
from ..record import Record


@dataclass
class DdpSummary(Keyed):
    """What a rank's DDP wrapper and DDPOptimizer recorded (probes/ddp.summary, its `agreement`
    added by run/rank.py; an `error` instead where the summary failed), or the section's join of the
    ranks' (report/distributed.py `_ddp`). Keyed: a rank's keys depend on its wrapper (DDP adds its
    bucket cap and flags), and the JSON keeps them as recorded; keys no field reads stay in `extra`."""

    wrapper: str | None = None
    optimize_ddp: str | None = None  # repr of torch._dynamo.config.optimize_ddp
    mode: str | None = None
    bucket_cap_mb: float | None = None
    bucket_cap_bytes: int | None = None
    # a rank's count at the first call; the section's: one count where the ranks agree, else by rank
    subgraphs: int | dict[str, int | None] | None = None
    subgraphs_per_rank: dict[str, int | None] | None = None  # the section's only
    method: str | None = None


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
    ddp: DdpSummary | None = None


@dataclass
class Divergence(Record):
    """Ranks that differ in one respect (graphs, breaks, guards, ...): each is a named hang risk."""

    kind: str | None = None
    what: str | None = None
    values: dict[str, Any] = field(default_factory=dict)  # rank (as text) -> its value
    text: str | None = None
    risk: str | None = None


@dataclass
class SlowestRank(Record):
    """The slowest rank of one phase, its seconds, and the fastest rank's (`slowest_per_phase`)."""

    rank: int | None = None
    seconds: float | None = None
    fastest_s: float | None = None


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
    slowest: dict[str, SlowestRank] = field(default_factory=dict)  # by phase
    ddp: DdpSummary | None = None
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
