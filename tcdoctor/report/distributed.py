"""The `distributed` report section: one row per rank, and what the ranks' differences mean.

Torch-free (reports are re-rendered and merged without torch). Inputs are the single-process
(typed) reports assembled for each rank (`report.assemble` over that rank's phase events) plus what the
rank recorded about itself (`rank` and `ddp` events, run/rank.py). Everything across ranks is
computed from the rows (`finish`), so `tcdoctor merge` can join the rows of several nodes'
reports and recompute it.

- compile_skew_s: max - min over ranks of the cold first compiled call (both launches start every
  rank's first call together: a barrier lines them up). What the fastest rank waits at the first
  collective when every rank starts with an empty cache.
- mixed_cache_skew_s: the largest |cold first call of rank i - warm first call of rank j|, i != j
  (the warm launch is a second torchrun against each rank's own cache dir): what one rank waits for
  the other in a partially warm cluster. Computed from the two launches, not run as one mixed job.
  With a backend that has no compile cache (eager, aot_eager) "warm" is only a fresh process.
- divergences: ranks that differ in graphs, per-graph op counts, graph breaks (reason, file, line),
  guards, recompiles or their reasons, inputs or DDP subgraphs. Each is a hang risk, named.
- slowest rank per phase, from each rank's own phase durations.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..stats import median_ci
from .record import Record
from .sections import DdpSummary, Distributed, Divergence, RankRow, SlowestRank

if TYPE_CHECKING:  # report/model.py imports this module: the classes are for annotations only
    from .model import ErrorEntry, Report

SKEW_WARN_FRACTION = 0.25  # a skew above this share of the process-group timeout gets advice

RISKS = {
    "graphs": (
        "ranks compile different graphs: under DDP/FSDP each graph issues its own collectives (DDPOptimizer "
        "buckets, FSDP all-gathers), so ranks that split differently issue collectives in a different order or "
        "number, and the job hangs until the process-group timeout"
    ),
    "graph_ops": (
        "ranks compile graphs of different sizes: they run different code between collectives, so the "
        "collective order can differ (a hang) and the faster rank waits at each one"
    ),
    "graph_breaks": (
        "ranks break the graph in different places: the code between breaks runs eagerly on one rank and "
        "compiled on another, so collectives are issued at different points (a hang risk)"
    ),
    "guards": (
        "ranks specialised differently (shapes, values, globals): a later input can fail the guards on one rank "
        "only, which then recompiles alone while the others wait at the next collective"
    ),
    "recompiles": (
        "one rank recompiles while the others wait at the next collective: its compile time is added to "
        "every rank's step, and past the process-group timeout the job dies"
    ),
    "inputs": (
        "ranks see different input shapes (an uneven last batch, a rank-dependent slice): they specialise and "
        "recompile at different steps, and the others wait"
    ),
    "ddp_subgraphs": (
        "DDPOptimizer split the graphs into a different number of buckets on different ranks: the "
        "all-reduces differ in number or order, which hangs"
    ),
}


# -- one rank ----------------------------------------------------------------------


@dataclass
class RankInfo(Record):
    """What a rank recorded about itself (its `rank` event, run/rank.py), and whether it finished
    (the parent's, from its events)."""

    OMIT_NONE = ("finished",)  # the rank itself does not know

    rank: int | None = None
    world_size: int | None = None
    local_rank: int | None = None
    backend: str | None = None
    pg_timeout_s: float | None = None
    host: str | None = None
    pid: int | None = None
    finished: bool | None = None


MIN_CI_SAMPLES = 3  # fewer steady-state samples give no interval worth showing


def step_ci(samples: list[float] | None) -> list[float] | None:
    """95% percentile-bootstrap CI of the median of one rank's steady-state samples (stats.median_ci)."""
    if not samples or len(samples) < MIN_CI_SAMPLES:
        return None
    return list(median_ci(samples))


def rank_row(rep: Report, info: RankInfo, ddp: dict | None) -> RankRow:
    """One rank's row, from its assembled single-process report and what it recorded about itself
    (`info`: its `rank` event; `ddp`: its `ddp` event). `merge` joins these rows across nodes'
    reports and `finish` recomputes every cross-rank figure from them."""
    workload = rep.environment.get("workload") or {}
    return RankRow(
        rank=info.rank,
        local_rank=info.local_rank,
        host=info.host,
        finished=info.finished,
        graphs=rep.graphs.count,
        graph_breaks=rep.graph_breaks.count,
        recompiles=rep.recompiles.count,
        guards=rep.guards.count,
        first_call_s=rep.compile.cold_s,
        warm_first_call_s=rep.compile.warm_s,
        compile_s=(rep.compile.phases or {}).get("total_compile_s"),
        step_median_s=rep.runtime.compiled.median_s,
        step_ci_s=step_ci((rep.runtime.raw or {}).get("compiled_s")),
        eager_step_median_s=rep.runtime.eager.median_s,
        speedup=rep.runtime.speedup,
        peak_bytes=rep.memory.compiled_peak_bytes,
        eager_peak_bytes=rep.memory.eager_peak_bytes,
        graph_ops=[g.get("ops") for g in rep.graphs.per_graph or []],
        break_reasons=_break_reasons(rep),
        recompile_reasons=[e.reason for e in rep.recompiles.events or []],
        inputs={"inputs": workload.get("inputs"), "variants": workload.get("variants")}
        if workload
        else None,
        phases={
            k: v.seconds
            for k, v in (rep.phases or {}).items()
            if v.status == "ok" and v.seconds is not None
        },
        errors=[{"phase": e.phase, "message": e.message} for e in rep.errors],
        ddp=DdpSummary.from_dict(ddp) if ddp is not None else None,
        # torch._dynamo.explain's run (its own backend, DDPOptimizer off), kept beside the compile's
        extra={
            "explain_graphs": rep.graphs.explain_run_count,
            "explain_graph_breaks": rep.graph_breaks.explain_run_count,
        },
    )


def _break_reasons(rep: Report) -> list[list]:
    """[reason, file, line] of each unique break, in a stable order so ranks compare equal."""
    breaks = [[f.reason, f.file, f.line] for f in rep.graph_breaks.unique or []]
    return sorted(breaks, key=lambda b: (str(b[0]), str(b[1]), b[2] or 0))


# -- across ranks --------------------------------------------------------------------
def _spread(values: list[float]) -> float | None:
    return (max(values) - min(values)) if len(values) >= 2 else None


def _compare(
    have: list[tuple[Any, Any]], kind: str, what: str, show: Any = None
) -> Divergence | None:
    """The ranks' values (rank, value) of one respect, as a divergence where two differ."""
    have = [(rank, v) for rank, v in have if v is not None]
    if len(have) < 2 or len({repr(v) for _, v in have}) == 1:
        return None
    show = show or (lambda v: str(v))
    listing = ", ".join(f"rank {rank}: {show(v)}" for rank, v in have)
    return Divergence(
        kind=kind,
        what=what,
        values={str(rank): v for rank, v in have},
        text=f"{what} differ between ranks ({listing})",
        risk=RISKS[kind],
    )


def divergences(rows: list[RankRow]) -> list[Divergence]:
    def breaks(v: list) -> str:
        return "; ".join(f"{r} at {str(f).rsplit('/', 1)[-1]}:{ln}" for r, f, ln in v) or "none"

    def reasons(v: list) -> str:
        return "; ".join(str(x) for x in v) or "none"

    def inputs(v: dict) -> str:
        return str(v.get("inputs")) + (f" then {v.get('variants')}" if v.get("variants") else "")

    checks = [
        ("graphs", "graphs", "graph counts", None),
        ("graph_ops", "graph_ops", "ops per graph", None),
        ("break_reasons", "graph_breaks", "graph breaks (reason, file, line)", breaks),
        ("graph_breaks", "graph_breaks", "graph-break counts", None),
        ("guards", "guards", "guard counts", None),
        ("recompile_reasons", "recompiles", "recompile reasons", reasons),
        ("recompiles", "recompiles", "recompile counts", None),
        ("inputs", "inputs", "input shapes", inputs),
    ]
    out, kinds = [], set()
    for key, kind, what, show in checks:
        d = _compare([(r.rank, getattr(r, key)) for r in rows], kind, what, show)
        if d and not (kind in kinds and key in ("graph_breaks", "recompiles")):  # one per kind
            out.append(d)
            kinds.add(kind)
    sub = [(r.rank, r.ddp.subgraphs if r.ddp else None) for r in rows]
    d = _compare(sub, "ddp_subgraphs", "DDPOptimizer subgraphs")
    if d:
        out.append(d)
    return out


def slowest_per_phase(rows: list[RankRow]) -> dict[str, SlowestRank]:
    out: dict[str, SlowestRank] = {}
    names = sorted({p for r in rows for p in (r.phases or {})})
    for name in names:
        have = [(r.rank, r.phases[name]) for r in rows if name in (r.phases or {})]
        if len(have) < 2:
            continue
        rank, secs = max(have, key=lambda x: x[1])
        out[name] = SlowestRank(rank=rank, seconds=secs, fastest_s=min(s for _, s in have))
    return out


def _ddp(rows: list[RankRow]) -> DdpSummary | None:
    """The first rank's DDP settings; its subgraphs one count where the ranks agree, else by rank."""
    have = [r for r in rows if r.ddp]
    if not have:
        return None
    first = have[0].ddp
    subs = {str(r.rank): r.ddp.subgraphs for r in have}
    values = {v for v in subs.values() if v is not None}
    return DdpSummary.of(
        wrapper=first.wrapper,
        optimize_ddp=first.optimize_ddp,
        mode=first.mode,
        bucket_cap_mb=first.bucket_cap_mb,
        bucket_cap_bytes=first.bucket_cap_bytes,
        subgraphs=values.pop() if len(values) == 1 else (None if not values else subs),
        subgraphs_per_rank=subs,
        method=first.method,
    )


def finish(sec: Distributed) -> Distributed:
    """(Re)compute every cross-rank figure from `sec.ranks`."""
    rows = sec.ranks = sorted(sec.ranks, key=lambda r: (r.rank is None, r.rank))
    sec.compile_skew_s = _spread([r.first_call_s for r in rows if r.first_call_s is not None])
    sec.compile_time_skew_s = _spread([r.compile_s for r in rows if r.compile_s is not None])
    pairs = [
        abs(a.first_call_s - b.warm_first_call_s)
        for a in rows
        for b in rows
        if a is not b and a.first_call_s is not None and b.warm_first_call_s is not None
    ]
    sec.mixed_cache_skew_s = max(pairs) if pairs else None
    timeout = sec.timeout_s  # each skew as a fraction of the timeout
    sec.compile_skew_fraction = _fraction(sec.compile_skew_s, timeout)
    sec.mixed_cache_skew_fraction = _fraction(sec.mixed_cache_skew_s, timeout)
    sec.divergences = divergences(rows)
    sec.slowest = slowest_per_phase(rows)
    sec.ddp = _ddp(rows)
    present, ws = {r.rank for r in rows}, sec.world_size
    sec.missing_ranks = [r for r in range(ws) if r not in present] if isinstance(ws, int) else []
    sec.method = {
        "compile_skew_s": (
            "max - min over ranks of the cold first compiled call (empty per-rank inductor cache); ranks "
            "start it together after a barrier, so the figure is what the fastest rank waits at the first "
            "collective"
        ),
        "compile_time_skew_s": "max - min over ranks of the compile time CompilationMetrics records (waits excluded)",
        "mixed_cache_skew_s": (
            "largest |cold first call of one rank - warm first call of another| (warm: a second "
            "torchrun launch against each rank's own cache dir): what one rank waits for the other when "
            "only one has a warm cache; computed from the two launches, not run as one mixed job"
        ),
        "timeout_s": "the process group's timeout your job runs with (--pg-timeout; torch's default otherwise)",
        "step_ci_s": "95% percentile-bootstrap CI of the median of the rank's compiled timing samples",
    }
    return sec


def _fraction(value: float | None, timeout: float | None) -> float | None:
    return (value / timeout) if value is not None and timeout else None


def section(
    rows: list[RankRow],
    world_size: int | None,
    backend: str | None,
    timeout_s: float | None,
    **extra: Any,
) -> Distributed:
    """The typed section of these rank rows, every cross-rank figure computed (`finish`)."""
    head = {"world_size": world_size, "backend": backend, "timeout_s": timeout_s, "ranks": rows}
    return finish(Distributed.from_dict({**head, **extra}))


# -- merge -------------------------------------------------------------------------
def merge(reports: list[Report]) -> Report:
    """Join per-node reports of one distributed run: their rank rows and errors; figures recomputed.

    The report that holds rank 0 (else the lowest rank) gives the single-rank sections. The
    inputs are not changed; the verdict of the result is the base report's until re-decided
    (`report.with_verdict`).
    """
    dists = [r.distributed for r in reports]
    if not all(dists):
        raise ValueError(
            "every report to merge must come from a distributed run (no 'distributed' section)"
        )
    rows: dict[int, RankRow] = {}
    for dist in dists:
        for row in dist.ranks:
            if row.rank in rows:
                raise ValueError(f"rank {row.rank} appears in more than one report")
            rows[row.rank] = copy.deepcopy(row)  # the inputs are not changed
    base = min(reports, key=_lowest_rank)
    out = copy.deepcopy(base)
    _merge_errors(out, [r for r in reports if r is not base])
    sec = out.distributed
    sec.ranks = list(rows.values())
    sec.world_size = max(d.world_size or 0 for d in dists) or None
    sec.nodes = sorted({str(r.host) for r in rows.values()})
    sec.merged_from = len(reports)
    out.distributed = finish(sec)
    return out


def _lowest_rank(rep: Report) -> int:
    ranks = rep.distributed.ranks if rep.distributed else []
    return min((r.rank for r in ranks), default=1 << 30)


def _merge_errors(out: Report, others: list[Report]) -> None:
    """The other nodes' errors, each once (a rank's error may be in several nodes' reports)."""
    out.errors = list(out.errors or [])
    seen = {_error_key(e) for e in out.errors}
    for rep in others:
        for e in rep.errors or []:
            if _error_key(e) not in seen:
                out.errors.append(copy.deepcopy(e))
                seen.add(_error_key(e))


def _error_key(e: ErrorEntry) -> tuple:
    """An error is the same error in two nodes' reports when its rank, phase and message are."""
    return (e.rank, e.phase, e.message)
