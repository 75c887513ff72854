"""A serving part as a stage record (`Part`), the serving run's state (`Serving`) and how the
parent starts one of a part's processes (`Serving.go`).

A `Part` is run/stages.py's `Stage` (its name, its parent function `run`, what it `needs`, `when`
it runs or why not) with what a serving part adds: its `weight` (its share of the time left, among
itself and the parts after it), how its processes' cache folders start (`copy_of`: a copy of an
earlier part's folder; else an empty folder seeded with the machine's probed ISA checks,
run/isa_seed.py) and the processes it starts (`serves`: each process's name and what it does in its
child, run/serving/child.py). run/serving/__init__.py lists the parts; run/stages.py's loop runs
them on a `Serving`, and a part that does not run says why in `Serving.not_measured` (the loop's
`skipped`: one dict, so the section's reasons keep the order they arose in).

Budgets: a part's share of the time left before the analysis's deadline, by `weight` over this
part and the later ones (`Serving.share`), so time one part leaves unused goes to the later ones;
a process whose share is under MIN_PART_S is "not measured (the --timeout left N s for it)". The
child stops replaying at its own deadline (its replay says how many requests it served), and the
parent kills it KILL_GRACE_S after.

Torch-free: the parent imports it (a part's child functions import torch when they run).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from ...report.events import Event
from ...report.record import Record
from ..isa_seed import seed_from, start_folder
from ..process import (
    ChildProcess,
    child_command,
    exited_message,
    last_started,
    stack_dump_after,
    timed_out_message,
    where_from_stacks,
)
from ..spec import ChildSpec, ServeSpec
from ..stages import Run, Stage
from ..stream import read_events

MIN_PART_S = 5.0  # a part's process with less time than this is not started
KILL_GRACE_S = 3.0  # the parent kills a part's process this long after its budget
SOURCE = "serving"  # the progress lines' source name
REPLAY_UNFINISHED = "the replay did not finish"
TRAINED = "a TrainStep is trained, not served: --traffic replays a Workload's requests"

# What one of a part's processes does in its child: (its ServeContext, its spec, its spawn record:
# when it was started, its import and build() times) -> None; it streams its results (ctx.put)
Serve = Callable[[Any, ServeSpec, dict], None]


@dataclasses.dataclass
class TrafficAsk(Record):
    """The Traffic as the cold process records it (target/traffic.py `Traffic.info`)."""

    kind: str | None = None
    default_n: int | None = None
    seed: int | None = None
    description: str | None = None
    buckets: dict[str, list[int]] | None = None
    warmup: int | None = None  # how many requests the user's own warm-up serves


@dataclasses.dataclass
class GenerationAsk(Record):
    """A Generation as the cold process records it (target/generation.py `generation_info`)."""

    max_new_tokens: int | None = None
    generate_kwargs: dict[str, str] = dataclasses.field(default_factory=dict)
    greedy: bool | None = None
    loop: bool | None = None


@dataclasses.dataclass
class Ask(Record):
    """What the serving section runs on (section.py `asked`): the requests, and the workload's
    kind, traffic and generation, read once from the cold process's environment record of the
    workload (its other keys stay in `extra`, unread here)."""

    requests: int = 0
    kind: str | None = None
    traffic: TrafficAsk | None = None
    generation: GenerationAsk | None = None


@dataclasses.dataclass(frozen=True)
class Part(Stage["Serving"]):
    """One serving part: a stage of the serving run, with its weight, its cache's start and the
    processes it starts (each a fresh process: run/serving/child.py runs `serves[name]`)."""

    weight: float = 1.0  # its share of the time left, among itself and the parts after it
    copy_of: str | None = None  # its processes start from a copy of this part's cache folder
    copied: str = ""  # what such a copy is called in its row's `cache_start`
    serves: Mapping[str, Serve] = dataclasses.field(default_factory=dict)
    generation: bool = False  # runs for a Generation only (run/serving/generate.py); else never


@dataclasses.dataclass
class Serving(Run):
    """The serving section's run: `Run`'s state (its `skipped` is the section's `not_measured`:
    the parts that did not run and the processes that failed, each with why), what was asked
    (`ask`: serving/section.py `asked`), the parts in run order, each part's result by name, and
    the cache folder each part's last process started from."""

    ask: Ask = dataclasses.field(default_factory=Ask)
    parts: tuple[Part, ...] = ()
    results: dict[str, Any] = dataclasses.field(default_factory=dict)
    caches: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def not_measured(self) -> dict[str, str]:
        return self.skipped

    @property
    def served(self) -> tuple[Part, ...]:
        """The parts of the asked kind, in run order: a Generation's (`Part.generation`), or a
        forward's. The other kind's are not stages of this run: they never run, and nothing is
        recorded of them."""
        return tuple(p for p in self.parts if p.generation == bool(self.ask.generation))

    def not_measured_of(self, generation: bool) -> dict[str, str]:
        """What the generation section (`generation`) or the serving section says was not
        measured: a generation part's entries are keyed 'generate…' (its part or strategy)."""
        return {k: v for k, v in self.not_measured.items() if k.startswith("generat") == generation}

    def share(self, part: Part) -> float:
        """`part`'s share of the time left: its weight over its own and the later parts'."""
        served = self.served
        later = served[[p.name for p in served].index(part.name) :]
        total = sum(p.weight for p in later) or 1.0
        return max(0.0, self.left_s() * part.weight / total)

    def go(self, part: Part, seconds: float, process: str | None = None, **handed: Any) -> Any:
        """Run one process of `part` (`process`: its name in `part.serves`, the part's own by
        default) within `seconds`; `handed`: its ServeSpec's warmup, strategy or aot. Its data (the
        pieces it streamed, and its `cache_start`), or None; a process that failed is one error
        line (`failures`) and its failure is its `not_measured` entry (keyed by the strategy, or
        the process)."""
        process = process or part.name
        strategy = handed.get("strategy")
        key = strategy or process
        if seconds < MIN_PART_S:
            self.not_measured[key] = f"the --timeout left {seconds:.0f} s for it"
            return None
        data, failure = self._start(part, process, seconds, handed)
        if failure:
            name = f"serving:{process}" + (f":{strategy}" if strategy else "")
            self.failures.append({"phase": name, "message": f"serving ({key}): {failure}"})
            self.not_measured[key] = failure
        return data

    def _start(
        self, part: Part, process: str, seconds: float, handed: dict
    ) -> tuple[dict | None, str | None]:
        """Start the process, wait for it (its progress lines fed as they come) and read back what
        it streamed: its data (None if it streamed nothing) and how it failed (None if it did not)."""
        tag = f"serve-{process}" + (f"-{handed['strategy']}" if handed.get("strategy") else "")
        cache = os.path.join(self.workdir, f"cache-{tag}")
        cache_start = start_folder(
            cache, seed_from(self.options), self.caches.get(part.copy_of or ""), part.copied
        )
        self.caches[part.name] = cache
        paths = {k: os.path.join(self.workdir, f"{tag}.{k}") for k in ("events", "stacks", "log")}
        spec_path = os.path.join(self.workdir, f"{tag}.spec")
        until = min(self.deadline, time.monotonic() + seconds + KILL_GRACE_S)
        spec = ChildSpec(
            target=self.target,
            role="serve",
            options=self.options,
            cache_dir=cache,
            events_path=paths["events"],
            stacks_path=paths["stacks"],
            dump_after_s=stack_dump_after(until, margin_s=1.5, min_left_s=3),
            serve=ServeSpec(process, self.ask.requests, seconds, time.time(), **handed),
        )
        child = ChildProcess(
            child_command(spec_path), spec, spec_path, paths["log"], cache_dir=cache
        )
        self.prog.new_child(SOURCE)

        def show() -> None:
            self.prog.feed(SOURCE, read_events(paths["events"]))
            self.prog.tick()

        child.wait(until, tick=show if self.prog.enabled else None)
        rc = child.exit_code()
        events = read_events(paths["events"])
        self.prog.feed(SOURCE, events)
        data = {ev.key: ev.data for ev in events if ev.event == "result"}
        if data:
            data["cache_start"] = cache_start
        return data or None, _failure(events, rc, child.timed_out, seconds, paths["stacks"])


def _failure(
    events: list[Event], rc: int, timed_out: bool, seconds: float, stacks: str
) -> str | None:
    """How a part's process failed, in one line (None when it finished its part)."""
    if any(ev.event == "end" and ev.ok for ev in events):
        return None
    failed = next((ev for ev in events if ev.event == "failed"), None)
    if failed is not None:
        where = failed.where
        at = f" (at {where['file']}:{where['line']})" if where else ""
        return f"{failed.phase}: {failed.message}{at}"
    phase = last_started(events) or "startup"
    where = where_from_stacks(stacks)
    if timed_out:
        return timed_out_message(round(seconds), phase, where)
    return exited_message(rc, phase, where)
