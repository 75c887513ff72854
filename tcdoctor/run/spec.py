"""The child spec: what the parent tells one analysis process, as one typed record.

The parent builds a `ChildSpec` (run/launcher.py for the cold, warm, timing and strategy children;
run/distributed.py for the ranks of a torchrun launch; run/serving/ for the serving parts),
`ChildProcess` (run/process.py) writes it to the child's spec file before the start, and the child
(run/child.py, run/rank.py) reads it back with `ChildSpec.read` and reads its attributes. Not to be confused with experiments/specs.py's `Spec`:
that is one experiment to run (a compile strategy, a fix, an ablation backend); a strategy child's
ChildSpec carries one, in `strategy.spec`.

What every process reads sits on `ChildSpec` itself (target, options, cache dir, event and stack
files, when to dump its stacks). What one role reads is a nested record, given for that role and
None for every other (checked when the spec is made, so a parent cannot hand a child an entry it
ignores): the cold child's `wait_for`, the warm child's `warm` (WarmHandshake), a timing-only
child's `timing` (TimingProcess), a strategy child's `strategy` (ExperimentRun), a rank's
`distributed` (RankLaunch), a serving part's `serve` (ServeSpec). What the warm child is told later, once the cold child is done, is a
`WarmGo`, written to its handshake's go file.

Wire format: `to_dict()` / `from_dict()`, JSON-ready. It is internal (the parent and its children
are always the same tcdoctor), so it carries no version; `from_dict` refuses a key it does not
know, a required one missing and a record that is not an object, each with one line
(ChildSpecError), so a parent and a child that disagree stop at the child's start instead of
running on a silent default. Torch-free: the parent imports it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, ClassVar

from ..checks.questions import Questions
from ..experiments.specs import Spec
from ..options import Options
from ..report.files import write_atomic
from ..report.record import required_fields

ROLES = ("cold", "warm", "timing", "strategy", "rank", "serve")
RANK_PLACEHOLDER = "{rank}"  # in a rank spec's paths: each rank fills in its RANK (`for_rank`)


class ChildSpecError(ValueError):
    """A child spec that cannot be read: an unknown or missing field, a field of another role."""


def _fields(cls: type, d: Any, where: str) -> dict[str, Any]:
    """The constructor arguments of dataclass `cls` in its dict `d`: every key a field of `cls`,
    every field without a default present. `where` names the record in the error."""
    if not isinstance(d, Mapping):
        raise ChildSpecError(f"{where}: expected an object, got {type(d).__name__}")
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(d) - set(names))
    if unknown:
        raise ChildSpecError(
            f"{where}: unknown field(s) {', '.join(map(repr, unknown))} "
            f"(its fields: {', '.join(names)})"
        )
    missing = [name for name in required_fields(cls) if name not in d]
    if missing:
        raise ChildSpecError(f"{where}: missing field(s) {', '.join(map(repr, missing))}")
    return dict(d)


class _Record:
    """A record of the wire format: to_dict is its fields, from_dict checks the keys (ChildSpec and
    WarmGo read their nested records themselves), `write` puts it in a file."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, d: Any, where: str) -> Any:
        return cls(**_fields(cls, d, where))

    def write(self, path: str) -> None:
        """Write it to `path` atomically (the child polls for the file: never half of one)."""
        write_atomic(path, json.dumps(self.to_dict()))


@dataclasses.dataclass(frozen=True)
class WarmHandshake(_Record):
    """The warm child's two signal files (run/launcher.py's analyze_target, read by run/child.py).

    The warm child starts with the cold one so that its `import torch` overlaps the cold child's;
    it writes `ready_path` once imported (the cold child compiles only then, uncontended), then
    waits for the parent to write `go_path` (a WarmGo: whether to run, the compiled call's time,
    the experiments it runs after its own phases)."""

    ready_path: str  # written by the warm child once torch is imported; the cold child waits on it
    go_path: str  # written by the parent once the cold child is done; the warm child waits on it


@dataclasses.dataclass(frozen=True)
class WarmGo(_Record):
    """What the parent tells the warm child once the cold child is done (written to its
    WarmHandshake's `go_path`, read by run/child.py): whether to run at all (the cold child
    compiled), the compiled call's time (its profiler budget), and the experiments it runs after
    its own phases (`Spec.shares_process`: each saves a process start, torch's import and build(),
    and compiles from the main cache) within the fix budget. The same wire rules as ChildSpec:
    an unknown or missing field is a ChildSpecError."""

    run: bool  # False: the cold child did not compile; the warm child ends, measuring nothing
    per_call_s: float | None  # the cold child's compiled median per call (None: not timed)
    experiments: tuple[Spec, ...]  # planned by the cold child, run in plan order
    fix_budget_s: float  # what the experiments that count against the fix budget may spend

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "per_call_s": self.per_call_s,
            "experiments": [s.to_dict() for s in self.experiments],
            "fix_budget_s": self.fix_budget_s,
        }

    @classmethod
    def from_dict(cls, d: Any, where: str = "go signal") -> WarmGo:
        kw = _fields(cls, d, where)
        try:
            kw["experiments"] = tuple(Spec.from_dict(e) for e in kw["experiments"])
        except (TypeError, ValueError) as exc:
            raise ChildSpecError(f"{where}'s experiments: {exc}") from None
        return cls(**kw)


@dataclasses.dataclass(frozen=True)
class TimingProcess(_Record):
    """A timing-only child's identity (experiments/plan.py's time_processes, started by
    run/launcher.py), kept in its runtime record as it is (probes/timing.py): which extra process
    it is, why it runs, its environment."""

    why: str  # why this process runs (processes.sequential: spread, undecided, pinned allocator)
    env: str  # its environment in the report's words: "as launched", or the pinned allocator's
    process: str  # its name in the report (processes.sequential.extra_name)


@dataclasses.dataclass(frozen=True)
class ExperimentRun:
    """What a strategy child runs (run/launcher.py's _Experiments, read by run/child.py)."""

    spec: Spec  # the experiment (experiments/specs.py): a strategy, a fix, an ablation backend
    cache_start: str  # what its inductor cache held at its start ("empty", a copy), kept in its row
    # its folder seeded with the machine's probed folder (run/isa_seed.py): the ISA probe's builds
    # the cold process paid, which this child skips; its row adds them back for a fresh container
    isa_probe_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec.to_dict(),
            "cache_start": self.cache_start,
            "isa_probe_s": self.isa_probe_s,
        }

    @classmethod
    def from_dict(cls, d: Any, where: str) -> ExperimentRun:
        kw = _fields(cls, d, where)
        try:
            kw["spec"] = Spec.from_dict(kw["spec"])
        except ValueError as exc:
            raise ChildSpecError(f"{where}: {exc}") from None
        return cls(**kw)


@dataclasses.dataclass(frozen=True)
class RankLaunch(_Record):
    """One rank's part of a torchrun launch (run/distributed.py's Launch, read by run/rank.py).
    Every rank of a launch reads the same spec file; its paths hold RANK_PLACEHOLDER."""

    process: str  # which launch: "cold" (an empty cache per rank) or "warm" (the same cache again)
    deadline_unix: float  # wall-clock time by which the rank's collectives must give up
    backend: str | None = None  # --dist-backend; None: nccl on CUDA, else gloo
    timeout_s: float | None = None  # --pg-timeout; None: torch's default (capped by the deadline)
    pid_path: str | None = None  # where the rank writes its pid (the parent kills stragglers by it)
    # what a gate asks of the timing (check TARGET --nproc N: --min-speedup, --max-slowdown), as
    # the single-process launcher's loop is handed it; one launch times no extra processes
    questions: Questions = Questions()

    LAUNCHES: ClassVar[tuple[str, ...]] = ("cold", "warm")

    def to_dict(self) -> dict[str, Any]:
        return dict(super().to_dict(), questions=self.questions.to_dict())

    @classmethod
    def from_dict(cls, d: Any, where: str) -> RankLaunch:
        kw = _fields(cls, d, where)
        try:
            kw["questions"] = Questions.from_dict(kw.get("questions") or {})
        except (KeyError, TypeError, ValueError) as exc:
            raise ChildSpecError(f"{where}'s questions: {exc!r}") from None
        return cls(**kw)

    def __post_init__(self) -> None:
        if self.process not in self.LAUNCHES:
            raise ChildSpecError(
                f"rank launch: unknown process {self.process!r} (one of {', '.join(self.LAUNCHES)})"
            )


@dataclasses.dataclass(frozen=True)
class ServeSpec(_Record):
    """What one serving process is told (run/serving/part.py `Serving.go`, read by
    run/serving/child.py): which process of which part it is, how many requests, its budget from its
    spawn (`started_unix`, also where the restart's import time starts), and what the later parts
    are handed: the warm-up requests, the strategy, the ahead-of-time part's files."""

    part: str  # a process name of run/serving's PARTS (`Part.serves`): "replay", "strategy", ...
    requests: int  # N: the traffic's first N requests are replayed
    budget_s: float  # its share of the analysis's time; it stops replaying at its own deadline
    started_unix: float  # time.time() just before the parent started it
    warmup: list[int] | None = None  # the proof and host parts: the warm-up's requests
    strategy: str | None = None  # a strategy process: which strategy
    aot: dict[str, Any] | None = None  # the aot processes: where to build; what was built
    files: str | None = None  # the generate part: the folder of its sides' logits files


# the role-specific fields: each given for its role only, and (but for wait_for) always for it
_RECORDS: dict[str, type] = {
    "warm": WarmHandshake,
    "timing": TimingProcess,
    "strategy": ExperimentRun,
    "distributed": RankLaunch,
    "serve": ServeSpec,
}
_ROLE_OF = {
    "wait_for": "cold",
    "warm": "warm",
    "timing": "timing",
    "strategy": "strategy",
    "distributed": "rank",
    "serve": "serve",
}
_OPTIONAL_FOR_ROLE = ("wait_for",)


@dataclasses.dataclass(frozen=True)
class ChildSpec(_Record):
    """What one analysis process is told: written by the parent, read once by the child at start."""

    target: str  # `path.py:function` (every role loads it)
    role: str  # one of ROLES: which phases the child runs (run/child.py, run/rank.py for "rank")
    options: Options  # the analysis options, as the parent parsed them
    cache_dir: str  # the child's TORCHINDUCTOR_CACHE_DIR (set again by the child before compiling)
    events_path: str  # where the child streams its phase events (run/stream.py)
    stacks_path: str  # faulthandler's file: a crash or a hang leaves the stacks here
    dump_after_s: float | None = None  # dump the stacks this long after start (None: never)
    wait_for: str | None = None  # cold only: the warm child's ready file, awaited before compiling
    warm: WarmHandshake | None = None  # warm only: its ready and go files
    timing: TimingProcess | None = None  # timing only: which extra timing process it is, and why
    strategy: ExperimentRun | None = None  # strategy only: the experiment and its cache's start
    distributed: RankLaunch | None = None  # rank only: the launch and its process group's limits
    serve: ServeSpec | None = None  # serve only: its serving part and what that part is handed

    def __post_init__(self) -> None:
        """A known role, given its own record and no other role's."""
        if self.role not in ROLES:
            raise ChildSpecError(
                f"child spec: unknown role {self.role!r} (one of {', '.join(ROLES)})"
            )
        for name, role in _ROLE_OF.items():
            given = getattr(self, name) is not None
            if given and self.role != role:
                raise ChildSpecError(
                    f"child spec: field {name!r} is for the {role} role, not {self.role!r}"
                )
            if not given and self.role == role and name not in _OPTIONAL_FOR_ROLE:
                raise ChildSpecError(f"child spec: the {role} role needs field {name!r}")

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: every field, records as objects, the options as Options.to_dict."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.to_dict() if hasattr(value, "to_dict") else value
        return out

    @classmethod
    def from_dict(cls, d: Any) -> ChildSpec:
        """The spec `d` describes; ChildSpecError (one line) for an unknown or missing field, a
        record that is not an object, or options that Options refuses."""
        kw = _fields(cls, d, "child spec")
        try:
            if not isinstance(kw["options"], Mapping):
                raise ValueError(f"expected an object, got {type(kw['options']).__name__}")
            kw["options"] = Options.from_dict(kw["options"])
        except ValueError as exc:
            raise ChildSpecError(f"child spec's options: {exc}") from None
        for name, record in _RECORDS.items():
            if kw.get(name) is not None:
                kw[name] = record.from_dict(kw[name], f"child spec's {name}")
        return cls(**kw)

    @classmethod
    def read(cls, path: str) -> ChildSpec:
        """The spec in file `path`; ChildSpecError when it is not JSON or not a spec."""
        try:
            with open(path, encoding="utf-8") as fh:
                d = json.load(fh)
        except (OSError, ValueError) as exc:
            raise ChildSpecError(f"child spec {path}: cannot be read: {exc}") from None
        return cls.from_dict(d)

    def for_rank(self, rank: str | int) -> ChildSpec:
        """A rank spec with RANK_PLACEHOLDER filled in: its cache dir, event, stack and pid files
        are one per rank (cache/rank{R}, rank{R}.events, ...), from the one file every rank reads."""

        def fill(path: str | None) -> str | None:
            return path.replace(RANK_PLACEHOLDER, str(rank)) if path else path

        launch = self.distributed
        return dataclasses.replace(
            self,
            cache_dir=fill(self.cache_dir),
            events_path=fill(self.events_path),
            stacks_path=fill(self.stacks_path),
            distributed=dataclasses.replace(launch, pid_path=fill(launch.pid_path))
            if launch
            else None,
        )
