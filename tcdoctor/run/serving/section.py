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

from collections.abc import Mapping
from typing import Any, TypeVar

from ...experiments.shapes import SERVED_LABELS
from ...options import Options
from ...report.processes.paired import log_spread, ratio_interval, steady
from ...report.record import Record
from ...report.sections.serving import ServedSide, Startup
from .generate_section import build as generation
from .part import GENERATED, NOT_GENERATED, Serving

R = TypeVar("R", bound=Record)


def asked(options: Options, workload: Mapping[str, Any] | None) -> dict | None:
    """Whether the serving section runs, and on what: {"requests", "traffic"} or None (no traffic
    and no --traffic: the analysis costs what it did). `workload`: the cold process's environment
    record of the workload (its `traffic` key is there only when the Workload gives one)."""
    traffic = (workload or {}).get("traffic")
    if options.traffic is None and not traffic:
        return None
    n = options.traffic or int((traffic or {}).get("default_n") or 200)
    ask = {"requests": n, "traffic": traffic, "kind": (workload or {}).get("kind")}
    return {**ask, "generation": (workload or {}).get("generation")}


def yours(ask: Mapping[str, Any]) -> bool:
    """The Traffic gives the user's own warm-up (`Traffic(warmup=...)`)."""
    return bool(((ask or {}).get("traffic") or {}).get("warmup"))


def traffic_record(info: dict | None, n: int, replay: dict | None) -> dict:
    """The section's `traffic` record."""
    info = info or {}
    shapes = ((replay or {}).get("compiled") or (replay or {}).get("eager") or {}).get("shapes")
    return {
        "source": info.get("kind") or "inputs",
        "requests": n,
        "seed": info.get("seed"),
        "description": info.get("description")
        or "the target gave no traffic: replaying its inputs and variants, cycled",
        "distinct_shapes": len(set(shapes)) if shapes else None,
        "buckets": info.get("buckets"),
        "method": "the requests in traffic order, each produced just before it is served (off the "
        "clock), every RNG reset before each replay so every process replays the same requests",
    }


def _typed(part: dict | None, key: str | None, cls: type[R]) -> R | None:
    """A part's result (or its `key` entry) as the section's record, read once."""
    value = (part or {}).get(key) if key else part
    return cls.from_dict(value) if value else None


def _replay_steady(replay: dict | None) -> list | None:
    """The replay process's compiled latencies with the requests that compiled or ran on the eager
    fallback left out (None in their place): the same compiled code the other reference processes
    serve, once compiled."""
    side = _typed(replay, "compiled", ServedSide)
    if side is None:
        return None
    skip = {c.request for c in side.compiles or []} | set(side.fallback_requests or [])
    return [None if i in skip else x for i, x in enumerate(side.latencies_s)]


def _proven(proof: dict | None) -> list | None:
    """The proof process's replay after the warm-up: the reference's steady latencies."""
    return ((proof or {}).get("proof") or {}).get("latencies_s")


def process_spread(replay: dict | None, proof: dict | None, host: dict | None) -> float | None:
    """The largest |log(median ratio)| between any two of the reference's processes (plain
    torch.compile served once compiled: the replay process's compiled side after its compiles,
    the proof's replay, the host part's compiled replay), each pair on the requests both served;
    None with fewer than two. The largest pair, not one pair: on this 2-core machine the same
    compiled model's p50 differed by 20-27% between two of these processes while the other pair
    agreed within a few percent, and one strategy row (one process) read 1.40x slower in one run
    and 0.88x faster in the next under the one-pair spread (samples/serving.py, Inductor)."""
    host_side = (host or {}).get("compiled_replay") or {}  # the host part's own record
    runs = [_replay_steady(replay), _proven(proof), host_side.get("latencies_s")]
    spreads = [
        d
        for i, a in enumerate(runs)
        for b in runs[i + 1 :]
        if a is not None and b is not None and (d := log_spread(a, b)) is not None
    ]
    return max(spreads) if spreads else None


def intervals(rows: list[dict], replay: dict | None, proof: dict | None, host: dict | None) -> None:
    """Each strategy row's `interval` against the reference (see the module's docstring)."""
    ref = steady(_proven(proof))
    floor = process_spread(replay, proof, host)
    for row in rows:
        mine = steady(row.get("latencies_s"), set(row.get("fallback_requests") or ()))
        iv = ratio_interval(mine, ref, floor, "automatic") if ref else None
        row["interval"] = iv.to_dict() if iv is not None else None


def reference_row(replay: dict | None, proof: dict | None, warmup: dict | None) -> dict | None:
    """The reference strategy's row (plain torch.compile): compiles from the replay's cold compiled
    side, steady latencies from the proof process's replay after the warm-up."""
    compiled, served = _typed(replay, "compiled", ServedSide), _proven(proof)
    if compiled is None or served is None:
        return None
    startup = _typed(replay, "startup", Startup) or Startup()  # the user's warm-up's compiles
    made = [*(startup.compiles or []), *(compiled.compiles or [])]
    return {
        "name": "automatic",
        "label": SERVED_LABELS["automatic"],
        "latencies_s": served,
        "compiles": sum(1 for c in made if c.kind in ("compile", "recompile")),
        "compile_s": (compiled.compile_s or 0.0) + (startup.compile_s or 0.0),
        "warmup_s": (warmup or {}).get("seconds_cold"),
        "fallback_requests": compiled.fallback_requests or [],
        "errors": [],
        "interval": None,
        "method": "the replay process's compiled side (compiles, from an empty cache, the user's "
        "warm-up's included) and the proof process's replay after the warm-up (latencies): the "
        "reference every strategy is compared with",
    }


def request_errors(replay: dict | None) -> list[str]:
    """One line per request the replay could not serve (the traffic's generator failed, or the
    model rejected it), each naming the request by index and shapes, eager side first."""
    lines, seen = [], set()
    for side in ("eager", "compiled"):
        for e in ((replay or {}).get(side) or {}).get("errors") or []:
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


def build(run: Serving) -> dict:
    """The serving section's dict (report/sections/serving.py reads it)."""
    r = run.results
    replay, proof, host = r.get("replay"), r.get("proof"), r.get("host")
    warmup = dict((replay or {}).get("warmup") or {}) or None
    if warmup is not None:
        warmup["source"] = "yours" if yours(run.ask) else "derived"
        warmup["user"] = (replay or {}).get("startup")
        warmup["seconds_cold"] = (host or {}).get("warmup_s")
        warmup["seconds_warm"] = (proof or {}).get("warmup_s")
        warmup["proof"] = (proof or {}).get("proof")
    rows = list(r.get("strategies") or [])
    ref = reference_row(replay, proof, warmup) if rows else None  # what the rows are against
    if ref is not None:
        rows.insert(0, ref)
    intervals([row for row in rows if row is not ref], replay, proof, host)
    return {
        "traffic": traffic_record(run.ask.get("traffic"), run.ask["requests"], replay),
        "replay": {k: v for k, v in (replay or {}).items() if k not in ("warmup", "startup")}
        or None,
        "warmup": warmup,
        "restart": (proof or {}).get("restart"),
        "strategies": rows,
        "process_spread": process_spread(replay, proof, host),
        "host": (host or {}).get("host"),
        "threads": (host or {}).get("threads"),
        "aot": r.get("aot"),
        "not_measured": {
            k: v
            for k, v in run.not_measured.items()
            if v not in (GENERATED, NOT_GENERATED) and not k.startswith("generat")
        },
        **({"generation": g} if (g := generation(run)) is not None else {}),
    }
