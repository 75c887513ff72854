"""The parent's plan of the serving section (issue 55): which fresh processes replay the traffic,
in which order, each within its own time budget, and how their results become the section.

When it runs: the target's Workload gives a traffic (`Workload(..., traffic=Traffic(...))`, which
the cold analysis process reports in its environment record) or `--traffic N` asks for one
(`asked`). Otherwise nothing here runs and the analysis costs what it cost before: no process, no
import. N is `--traffic`, else the traffic's own length (its `n`, a list's length, 200 for a
generator or distribution).

The parts, one fresh process each (run/serve.py starts them through run/process.py's
ChildProcess and hands each result back here), in this order:

1. `replay` (an empty cache folder seeded with the machine's probed CPU ISA checks: a server's cold
   start): the traffic served eager, then compiled (probes/traffic_replay.py); the warm-up set is
   derived from the compiles (probes/warmup.py).
2. `proof` (a COPY of the replay's cache folder: a restarted server): the restart's figures
   (probes/restart.py), then the warm-up, then the traffic under
   `set_stance("fail_on_recompile")` (probes/warmup.py).
3. `strategy:<name>`, one process each (an empty seeded folder: each pays its own cold compiles):
   static shapes, `dynamic=True`, `mark_dynamic` on the dimensions that vary, padding to the
   buckets the Traffic gives, regional compilation (experiments/serve_strategies.py).
4. `host` (an empty seeded folder: the warm-up's cold time is measured here): host against device
   time, `skip_guard_eval_unsafe`, and 4 threads in one process (probes/serve_threads.py).
5. `aot`: the ahead-of-time part (probes/aot.py, another helper's); `aot_part` is the one place it
   is wired in.

Budgets: each part's share of the time left before the analysis's deadline, by `WEIGHTS` over the
parts still to run, so time one part leaves unused goes to the later ones; a part whose share is
under MIN_PART_S is "not measured (the --timeout left N s for it)". The child stops replaying at its
own deadline (its replay says how many requests it served), and the parent kills it a little after.

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
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..options import Options
from ..report.files import write_atomic
from ..report.processes.paired import log_spread, ratio_interval, steady

PARTS = ("replay", "proof", "strategies", "host", "aot")  # "aot" runs as "aot" + "aot_serve"
WEIGHTS = {"replay": 3.0, "proof": 2.0, "strategies": 3.0, "host": 2.0, "aot": 2.0}
MIN_PART_S = 5.0  # a part with less time than this is not started
KILL_GRACE_S = 3.0  # the parent kills a part's process this long after its budget
STRATEGIES = ("static", "dynamic", "marked", "padded", "regional")
STRATEGY_LABELS = {
    "automatic": "torch.compile as the target compiles it (automatic dynamic shapes)",
    "static": "static shapes: dynamic=False",
    "dynamic": "dynamic=True",
    "marked": "mark_dynamic on the dimensions that vary",
    "padded": "padded to the Traffic's buckets (static), the other varying dims marked dynamic",
    "regional": "regional compilation: the repeated block compiled alone",
}
THREADS = 4  # threads serving the traffic in one process (the issue's N)
AOT_NOT_BUILT = "the AOT part is not built yet"
AOT_BUILD_SHARE = 0.7  # of the aot part's time: export and the C++ build; the rest loads and serves


@dataclasses.dataclass
class ServeSpec:
    """What one serving process is told (run/serve.py reads it): its part, its target and options,
    how many requests, its budget from its spawn (`started_unix`), its cache folder and files, and
    for the later parts the warm-up requests and the strategy."""

    target: str
    part: str  # one of PARTS ("strategies" runs as part "strategy" with `strategy` set)
    options: Options
    requests: int
    budget_s: float
    started_unix: float
    cache_dir: str
    events_path: str
    stacks_path: str
    dump_after_s: float | None = None
    warmup: list[int] | None = None
    strategy: str | None = None
    aot: dict[str, Any] | None = None  # the aot parts: where to build; what was built

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["options"] = self.options.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ServeSpec:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"serve spec: unknown field(s) {', '.join(unknown)}")
        kw = dict(d)
        kw["options"] = Options.from_dict(kw["options"])
        return cls(**kw)

    def write(self, path: str) -> None:
        write_atomic(path, json.dumps(self.to_dict()))

    @classmethod
    def read(cls, path: str) -> ServeSpec:
        with open(path, encoding="utf-8") as fh:
            return cls.from_dict(json.load(fh))


def asked(options: Options, workload: Mapping[str, Any] | None) -> dict | None:
    """Whether the serving section runs, and on what: {"requests", "traffic"} or None (no traffic
    and no --traffic: the analysis costs what it did). `workload`: the cold process's environment
    record of the workload (its `traffic` key is there only when the Workload gives one)."""
    traffic = (workload or {}).get("traffic")
    if options.traffic is None and not traffic:
        return None
    n = options.traffic or int((traffic or {}).get("default_n") or 200)
    return {"requests": n, "traffic": traffic, "kind": (workload or {}).get("kind")}


def yours(ask: Mapping[str, Any]) -> bool:
    """The Traffic gives the user's own warm-up (`Traffic(warmup=...)`)."""
    return bool(((ask or {}).get("traffic") or {}).get("warmup"))


def budget(part: str, left_s: float, remaining: list[str]) -> float:
    """`part`'s share of the `left_s` seconds before the deadline, among the parts still to run."""
    total = sum(WEIGHTS[p] for p in remaining) or 1.0
    return max(0.0, left_s * WEIGHTS[part] / total)


def strategies(options: Options, traffic: Mapping[str, Any] | None, replay: dict) -> tuple:
    """The strategies to run (names) and those not run with why."""
    not_run: dict[str, str] = {}
    if options.dynamic is False:
        return [], {"strategies": "--no-dynamic"}
    distinct = len(set((replay.get("compiled") or {}).get("shapes") or []))
    if options.dynamic is None and distinct < 2:
        return [], {
            "strategies": "every request has the same shapes (--dynamic compares them anyway)"
        }
    names = list(STRATEGIES)
    if not (traffic or {}).get("buckets"):
        names.remove("padded")
        not_run["padded"] = (
            "the Traffic gives no bucket sizes (Traffic.shapes(make, ..., buckets={dim: sizes}))"
        )
    return names, not_run


# -- the section from the parts' results ---------------------------------------------------


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


def _replay_steady(replay: dict | None) -> list | None:
    """The replay process's compiled latencies with the requests that compiled or ran on the eager
    fallback left out (None in their place): the same compiled code the other reference processes
    serve, once compiled."""
    compiled = (replay or {}).get("compiled") or {}
    lat = compiled.get("latencies_s")
    if lat is None:
        return None
    skip = {c.get("request") for c in compiled.get("compiles") or []}
    skip |= set(compiled.get("fallback_requests") or [])
    return [None if i in skip else x for i, x in enumerate(lat)]


def process_spread(replay: dict | None, proof: dict | None, host: dict | None) -> float | None:
    """The largest |log(median ratio)| between any two of the reference's processes (plain
    torch.compile served once compiled: the replay process's compiled side after its compiles,
    the proof's replay, the host part's compiled replay), each pair on the requests both served;
    None with fewer than two. The largest pair, not one pair: on this 2-core machine the same
    compiled model's p50 differed by 20-27% between two of these processes while the other pair
    agreed within a few percent, and one strategy row (one process) read 1.40x slower in one run
    and 0.88x faster in the next under the one-pair spread (samples/serving.py, Inductor)."""
    runs = [
        _replay_steady(replay),
        ((proof or {}).get("proof") or {}).get("latencies_s"),
        ((host or {}).get("compiled_replay") or {}).get("latencies_s"),
    ]
    spreads = [
        d
        for i, a in enumerate(runs)
        for b in runs[i + 1 :]
        if a is not None and b is not None and (d := log_spread(a, b)) is not None
    ]
    return max(spreads) if spreads else None


def intervals(rows: list[dict], replay: dict | None, proof: dict | None, host: dict | None) -> None:
    """Each strategy row's `interval` against the reference (see the module's docstring)."""
    ref = steady(((proof or {}).get("proof") or {}).get("latencies_s"))
    floor = process_spread(replay, proof, host)
    for row in rows:
        mine = steady(row.get("latencies_s"), set(row.get("fallback_requests") or ()))
        iv = ratio_interval(mine, ref, floor, "automatic") if ref else None
        row["interval"] = iv.to_dict() if iv is not None else None


def reference_row(replay: dict | None, proof: dict | None, warmup: dict | None) -> dict | None:
    """The reference strategy's row (plain torch.compile): compiles from the replay's cold compiled
    side, steady latencies from the proof process's replay after the warm-up."""
    compiled = (replay or {}).get("compiled")
    served = ((proof or {}).get("proof") or {}).get("latencies_s")
    if not compiled or served is None:
        return None
    startup = (replay or {}).get("startup") or {}  # the user's warm-up: its compiles count too
    made = [*(startup.get("compiles") or []), *(compiled.get("compiles") or [])]
    return {
        "name": "automatic",
        "label": STRATEGY_LABELS["automatic"],
        "latencies_s": served,
        "compiles": sum(1 for c in made if c.get("kind") in ("compile", "recompile")),
        "compile_s": (compiled.get("compile_s") or 0.0) + (startup.get("compile_s") or 0.0),
        "warmup_s": (warmup or {}).get("seconds_cold"),
        "fallback_requests": compiled.get("fallback_requests") or [],
        "errors": [],
        "interval": None,
        "method": "the replay process's compiled side (compiles, from an empty cache, the user's "
        "warm-up's included) and the proof process's replay after the warm-up (latencies): the "
        "reference every strategy is compared with",
    }


def aot_wanted(options: Options) -> str | None:
    """None when the ahead-of-time part runs; otherwise why not. It needs probes/aot.py (found
    without importing it: the parent imports no torch) and builds with Inductor, so it runs with
    the Inductor backend only (a test's aot_eager analysis builds no C++)."""
    import importlib.util

    if importlib.util.find_spec("tcdoctor.probes.aot") is None:
        return AOT_NOT_BUILT
    if options.backend != "inductor":
        return (
            f"--backend {options.backend}: the AOTInductor package is built with Inductor "
            "(a C++ build); it is tried with --backend inductor"
        )
    return None


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


Start = Callable[[str, float, dict], tuple[dict | None, str | None]]


class Parts:
    """The serving parts run in turn: each started by `start(part, budget_s, extra)` (run/serve.py:
    a fresh process; it returns the part's data, or None and why it failed), within its budget of
    the time `left()` before the analysis's deadline. `section()` is the report's section;
    `failures` the parts that failed, each one line (the report's errors: exit 4)."""

    def __init__(self, start: Start, options: Options, ask: dict, left: Callable[[], float]):
        self.start, self.options, self.ask, self.left = start, options, ask, left
        self.remaining = list(PARTS)
        self.results: dict[str, Any] = {}
        self.not_measured: dict[str, str] = {}
        self.failures: list[dict] = []

    def _go(self, part: str, extra: dict, share: float | None = None) -> dict | None:
        """Run one part's process within its share of the time left (`share`: given by the caller
        for one strategy of several)."""
        seconds = share if share is not None else budget(part, self.left(), self.remaining)
        if part in self.remaining:
            self.remaining.remove(part)
        key = extra.get("strategy") or part
        if seconds < MIN_PART_S:
            self.not_measured[key] = f"the --timeout left {seconds:.0f} s for it"
            return None
        data, failure = self.start(part, seconds, extra)
        if failure:
            name = f"serving:{part}" + (f":{extra['strategy']}" if extra.get("strategy") else "")
            self.failures.append({"phase": name, "message": f"serving ({key}): {failure}"})
            self.not_measured[key] = failure
        return data

    def run(self) -> None:
        if self.ask.get("kind") == "train":
            self.not_measured["serving"] = (
                "a TrainStep is trained, not served: --traffic replays a Workload's requests"
            )
            return
        replay = self.results["replay"] = self._go("replay", {})
        for line in request_errors(replay):
            self.failures.append({"phase": "serving:requests", "message": line})
        if replay is None:
            for part in self.remaining:
                self.not_measured.setdefault(part, "the replay did not finish")
            return
        derived = replay.get("warmup")
        # the proof checks the user's own warm-up where the Traffic gives one (served first by
        # every part that warms up: probes/warmup.py serve_warmup), else the derived set
        warm = [] if yours(self.ask) else (derived or {}).get("requests") or []
        if derived is None:  # the compiled side did not finish: nothing to warm up or prove
            why = "the replay's compiled side did not finish: no warm-up was derived"
            self.not_measured["proof"] = self.not_measured["host"] = why
            self.remaining.remove("proof")
        else:
            self.results["proof"] = self._go("proof", {"warmup": warm})
        names, skipped = strategies(self.options, self.ask.get("traffic"), replay)
        self.not_measured.update(skipped)
        end = time.monotonic() + budget("strategies", self.left(), self.remaining)
        self.remaining.remove("strategies")
        rows = []
        for i, name in enumerate(names):  # each its share of what the earlier ones left
            share = (end - time.monotonic()) / (len(names) - i)
            data = self._go("strategy", {"strategy": name}, share)
            if data and data.get("row"):
                rows.append({**data["row"], "cache_start": data.get("cache_start")})
        self.results["strategies"] = rows
        if derived is not None:
            self.results["host"] = self._go("host", {"warmup": warm})
        else:
            self.remaining.remove("host")
        self._aot()

    def _aot(self) -> None:
        """The ahead-of-time part (probes/aot.py): export and build in one process, then load
        and serve the package in a fresh one (AOT_BUILD_SHARE of the part's time to the build).
        The build process puts the `aot` dict as it stands without a served package; the serve
        process puts the whole one (probes/aot.py `finish` joins them in the child)."""
        why = aot_wanted(self.options)
        end = time.monotonic() + budget("aot", self.left(), self.remaining)
        self.remaining.remove("aot")
        if why:
            self.not_measured["aot"] = why
            return
        built = self._go("aot", {}, (end - time.monotonic()) * AOT_BUILD_SHARE) or {}
        aot = built.get("unserved")
        if (built.get("built") or {}).get("package_path"):
            served = self._go("aot_serve", {"built": built["built"]}, end - time.monotonic()) or {}
            if served.get("aot"):
                aot = served["aot"]
            elif aot is not None:
                why = (
                    self.not_measured.pop("aot_serve", None) or "the serving process did not report"
                )
                aot = {**aot, "not_measured": {**aot.get("not_measured", {}), "serve": why}}
        self.results["aot"] = aot

    def section(self) -> dict:
        """The serving section's dict (report/sections/serving.py reads it)."""
        r = self.results
        replay, proof, host = r.get("replay"), r.get("proof"), r.get("host")
        warmup = dict((replay or {}).get("warmup") or {}) or None
        if warmup is not None:
            warmup["source"] = "yours" if yours(self.ask) else "derived"
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
            "traffic": traffic_record(self.ask.get("traffic"), self.ask["requests"], replay),
            "replay": {k: v for k, v in (replay or {}).items() if k not in ("warmup", "startup")}
            or None,
            "warmup": warmup,
            "restart": (proof or {}).get("restart"),
            "strategies": rows,
            "process_spread": process_spread(replay, proof, host),
            "host": (host or {}).get("host"),
            "threads": (host or {}).get("threads"),
            "aot": r.get("aot"),
            "not_measured": dict(self.not_measured),
        }
