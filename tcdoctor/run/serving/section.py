"""The serving section from its parts' results: whether it runs (`asked`), the records the
parts' results are joined into (`section`), and the significance of each strategy against the
reference (`intervals`).

Significance (`intervals`): each strategy is compared with the reference, plain `torch.compile` as
the target compiles it (the proof process's replay after the warm-up), on the requests both served
in their steady state, paired by request (the same traffic, in the same order): a percentile
bootstrap interval of the ratio of medians (strategy / reference). Across processes: the reference
is replayed in three fresh processes (the replay's compiled side once its compiles are done, the
proof's replay and the host part's compiled replay), and the largest log spread between any two of
them (`process_spread`) is the spread between processes of one configuration; each strategy's
interval is widened by that spread on both sides (log scale) before it decides. So a strategy is
called faster (`decides` "faster") only when it is faster by more than processes of the same
configuration differ, and "slower" likewise; otherwise "inside the noise". Why this rule: it costs
no extra process (the three reference replays are needed anyway), and a between-process difference
larger than the within-process interval is what makes a one-process comparison overconfident. Its
pitfall: three processes estimate the spread from few draws (one pair did not suffice: on
samples/serving.py the marked row read 1.40x slower, then 0.88x faster); wave 2's verdict names a
strategy best only when its interval decides.

Torch-free: the parent imports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...experiments.shapes import SERVED_LABELS
from ...options import Options
from ...report.processes.paired import log_spread, ratio_interval, steady
from ...report.record import Record
from ...report.sections import serving as sec
from .generate_section import build as generation
from .part import Ask, Serving, TrafficAsk

R = TypeVar("R", bound=Record)


@dataclass
class ReplayPart(sec.Replay):
    """The replay part's result: its Replay, the user's warm-up as it served it (`startup`) and
    the warm-up derived from its compiled side's compiles (`warmup`)."""

    startup: sec.Startup | None = None
    warmup: sec.Warmup | None = None

    @property
    def replay(self) -> sec.Replay:
        """The section's `replay`: this result without the warm-ups."""
        return sec.Replay(**{f.name: getattr(self, f.name) for f in dataclasses.fields(sec.Replay)})


@dataclass
class ProofPart(Record):
    """The proof part's result: its warm-up's seconds (a copy of the replay's cache), the restart."""

    warmup_s: float | None = None
    restart: sec.Restart | None = None
    proof: sec.Proof | None = None


@dataclass
class CompiledReplay(Record):
    """The host part's compiled replay: a process of the reference (section's `process_spread`)."""

    latencies_s: list[float | None] = field(default_factory=list)
    compiles: int | None = None


@dataclass
class HostPart(Record):
    """The host part's result: its warm-up's seconds (an empty cache), host time and threads."""

    warmup_s: float | None = None
    compiled_replay: CompiledReplay | None = None
    host: sec.Host | None = None
    threads: sec.Threads | None = None


def typed(value: dict | None, cls: type[R]) -> R | None:
    """A part's result (or a piece of it) as its record, read once; None for none."""
    return cls.from_dict(value) if value is not None else None


def asked(options: Options, workload: Mapping[str, Any] | None) -> Ask | None:
    """Whether the serving section runs, and on what (None: no traffic and no --traffic, the
    analysis costs what it did). `workload`: the cold process's environment record of the
    workload (its `traffic` key is there only when the Workload gives one)."""
    ask = Ask.from_dict(workload)
    if options.traffic is None and not ask.traffic:
        return None
    ask.requests = options.traffic or int((ask.traffic and ask.traffic.default_n) or 200)
    return ask


def yours(ask: Ask) -> bool:
    """The Traffic gives the user's own warm-up (`Traffic(warmup=...)`)."""
    return bool(ask.traffic and ask.traffic.warmup)


def traffic_record(info: TrafficAsk | None, n: int, replay: ReplayPart | None) -> sec.TrafficInfo:
    """The section's `traffic` record."""
    info = info or TrafficAsk()
    side = replay and (replay.compiled or replay.eager)
    return sec.TrafficInfo(
        source=info.kind or "inputs",
        requests=n,
        seed=info.seed,
        description=info.description
        or "the target gave no traffic: replaying its inputs and variants, cycled",
        distinct_shapes=len(set(side.shapes)) if side and side.shapes else None,
        buckets=info.buckets,
        method="the requests in traffic order, each produced just before it is served (off the "
        "clock), every RNG reset before each replay so every process replays the same requests",
    )


def _replay_steady(replay: ReplayPart | None) -> list | None:
    """The replay process's compiled latencies with the requests that compiled or ran on the eager
    fallback left out (None in their place): the same compiled code the other reference processes
    serve, once compiled."""
    side = replay.compiled if replay else None
    if side is None:
        return None
    skip = {c.request for c in side.compiles} | set(side.fallback_requests)
    return [None if i in skip else x for i, x in enumerate(side.latencies_s)]


def _proven(proof: ProofPart | None) -> list | None:
    """The proof process's replay after the warm-up: the reference's steady latencies."""
    return proof.proof.latencies_s if proof and proof.proof else None


def process_spread(
    replay: ReplayPart | None, proof: ProofPart | None, host: HostPart | None
) -> float | None:
    """The largest |log(median ratio)| between any two of the reference's processes (plain
    torch.compile served once compiled: the replay process's compiled side after its compiles,
    the proof's replay, the host part's compiled replay), each pair on the requests both served;
    None with fewer than two. The largest pair, not one pair: on this 2-core machine the same
    compiled model's p50 differed by 20-27% between two of these processes while the other pair
    agreed within a few percent, and one strategy row (one process) read 1.40x slower in one run
    and 0.88x faster in the next under the one-pair spread (samples/serving.py, Inductor)."""
    hosted = host.compiled_replay if host else None  # the host part's own replay
    runs = [_replay_steady(replay), _proven(proof), hosted.latencies_s if hosted else None]
    spreads = [
        d
        for i, a in enumerate(runs)
        for b in runs[i + 1 :]
        if a is not None and b is not None and (d := log_spread(a, b)) is not None
    ]
    return max(spreads) if spreads else None


def intervals(rows: list[sec.ServeStrategy], ref: dict[int, float], floor: float | None) -> None:
    """Each strategy row's `interval` against the reference's steady latencies `ref`, widened by
    the spread between its processes `floor` (see the module's docstring)."""
    for row in rows:
        mine = steady(row.latencies_s, set(row.fallback_requests))
        row.interval = ratio_interval(mine, ref, floor, "automatic") if ref else None


def reference_row(
    replay: ReplayPart | None, proof: ProofPart | None, warmup: sec.Warmup | None
) -> sec.ServeStrategy | None:
    """The reference strategy's row (plain torch.compile): compiles from the replay's cold compiled
    side, steady latencies from the proof process's replay after the warm-up."""
    served = _proven(proof)
    if replay is None or replay.compiled is None or served is None:
        return None
    compiled = replay.compiled
    startup = replay.startup or sec.Startup()  # the user's warm-up's compiles
    return sec.ServeStrategy(
        name="automatic",
        label=SERVED_LABELS["automatic"],
        latencies_s=served,
        compiles=sum(1 for c in [*startup.compiles, *compiled.compiles] if c.kind in sec.MADE),
        compile_s=(compiled.compile_s or 0.0) + (startup.compile_s or 0.0),
        warmup_s=warmup.seconds_cold if warmup else None,
        fallback_requests=compiled.fallback_requests,
        errors=[],
        interval=None,
        method="the replay process's compiled side (compiles, from an empty cache, the user's "
        "warm-up's included) and the proof process's replay after the warm-up (latencies): the "
        "reference every strategy is compared with",
    )


def request_errors(replay: ReplayPart | None) -> list[str]:
    """One line per request the replay could not serve (the traffic's generator failed, or the
    model rejected it), each naming the request by index and shapes, eager side first."""
    lines, seen = [], set()
    for side in ("eager", "compiled"):
        for e in getattr(getattr(replay, side, None), "errors", None) or []:
            if e.get("request") in seen:
                continue
            seen.add(e.get("request"))
            if e.get("shapes") is None:
                lines.append(f"serving: {e.get('message')}")
            else:
                lines.append(
                    f"serving: request {e['request']} {e['shapes']} failed ({side}): {e['message']}"
                )
    return lines


def build(run: Serving) -> sec.Serving:
    """The serving section (report/sections/serving.py's record)."""
    r = run.results
    replay, proof, host = r.get("replay"), r.get("proof"), r.get("host")
    warmup = replay.warmup if replay else None
    if warmup is not None:
        warmup.source = "yours" if yours(run.ask) else "derived"
        warmup.user = replay.startup
        warmup.seconds_cold = host.warmup_s if host else None
        warmup.seconds_warm = proof.warmup_s if proof else None
        warmup.proof = proof.proof if proof else None
    rows: list[sec.ServeStrategy] = list(r.get("strategies") or [])
    ref = reference_row(replay, proof, warmup) if rows else None  # what the rows are against
    floor = process_spread(replay, proof, host)
    intervals(rows, steady(_proven(proof)), floor)
    return sec.Serving(
        traffic=traffic_record(run.ask.traffic, run.ask.requests, replay),
        replay=replay.replay if replay else None,
        warmup=warmup,
        restart=proof.restart if proof else None,
        strategies=[ref, *rows] if ref is not None else rows,
        process_spread=floor,
        host=host.host if host else None,
        threads=host.threads if host else None,
        aot=typed(r.get("aot"), sec.Aot),
        not_measured=run.not_measured_of(generation=False),
        generation=generation(run),
    )
