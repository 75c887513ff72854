"""The run's stages as data, and the one loop that runs them: a single-process analysis
(run/launcher.py `STAGES`) and a distributed one (run/distributed.py `STAGES`) are each a list of
`Stage` records run in order by `analyze`, with the same opening (the target checked, the work
folder, the deadline, the progress printer) and the same end (the progress closed, the work folder
removed, the exit code from the report's errors).

A `Stage` says what runs (`run`, a function of the run's state), in which process (`where`: the
parent itself, fresh analysis children, or a torchrun launch of ranks), what it needs (`needs`:
earlier stages, by name, that must have run; `when`: a condition on the run's state, which says
why not) and its budget (`min_left_s`: the seconds of the run's deadline it needs left to start).
A stage that does not run is noted with its reason in `Run.skipped`, which later stages read (a
distributed report says why the warm launch did not run). A stage's function reads and extends
the run's state: its events (what the report is assembled from), its failures, and the fields its
own kind of run adds (launcher.Analysis, distributed.Launches); the last stage assembles the
report into `Run.report`. Adding a stage is one record in a list and its function: its events reach
the report through `Run.events` (tests/test_stages.py plants one).

Steps inside a stage that the plan decides (the timing-only processes, the experiments:
experiments/plan.py) are generators: `execute` runs each step the plan yields and sends back what
it gave, so the plan decides and the launcher executes, and the plan never calls the launcher.

Pitfalls: a stage that starts children checks the deadline again before each (the stage's
`min_left_s` is only where it starts); an exception raised by a stage (a fatal record, a target
that cannot be loaded) ends the run, after the progress is closed and the work folder removed, as
one line with its exit code. Torch-free: the parent runs it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Generator, Sequence
from typing import Generic, TypeVar

from ..checks.questions import Questions
from ..errors import EXIT_INCOMPLETE, EXIT_OK
from ..options import Options
from ..outcomes import StrEnum
from ..report.events import Event
from ..report.model import Report
from .progress import Progress


class Where(StrEnum):
    """The process a stage's work runs in."""

    PARENT = "parent"  # the launcher's own process: no torch, none of the user's code
    CHILDREN = "children"  # fresh analysis processes (run/child.py), each with a deadline
    RANKS = "ranks"  # a torchrun launch: one analysis process per rank (run/rank.py)


@dataclasses.dataclass
class Run:
    """One analysis's state as its stages run: what it was asked, where it works, until when, and
    what the stages gathered (events, failures, which stages ran or why not, the report)."""

    target: str
    options: Options
    questions: Questions  # what a gate will judge (checks/questions.py)
    workdir: str
    deadline: float  # time.monotonic() by which everything stops
    prog: Progress
    events: list[Event] = dataclasses.field(default_factory=list)
    failures: list[dict] = dataclasses.field(default_factory=list)
    ran: list[str] = dataclasses.field(default_factory=list)
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)  # stage -> why not
    report: Report | None = None  # set by the last stage

    def left_s(self) -> float:
        """Seconds left before the deadline."""
        return self.deadline - time.monotonic()


R = TypeVar("R", bound=Run)

TIME_USED_UP = "the time limit was used up"


@dataclasses.dataclass(frozen=True)
class Stage(Generic[R]):
    """One stage of an analysis: its name, where it runs, its function, what it needs, its budget."""

    name: str
    where: Where
    run: Callable[[R], None]  # reads and extends the run's state (events, failures, report)
    needs: tuple[str, ...] = ()  # earlier stages that must have run
    # seconds of the deadline it needs left to start; 0: it runs whatever is left (the report,
    # and stages whose children check the deadline themselves and say what it left undone)
    min_left_s: float = 0.0
    when: Callable[[R], str | None] | None = None  # None: it runs; a string: why it does not

    def why_not(self, run: R) -> str | None:
        """Why this stage does not run now (None: it runs)."""
        missing = [n for n in self.needs if n not in run.ran]
        if missing:
            return f"it needs {', '.join(missing)}, which did not run"
        why = self.when(run) if self.when else None
        if why is None and self.min_left_s > 0 and run.left_s() < self.min_left_s:
            return TIME_USED_UP  # a stage with no budget of its own runs past the deadline too
        return why


def check_order(stages: Sequence[Stage]) -> None:
    """A list of stages that can run: names unique, each need an earlier stage (ValueError: a
    mistake in tcdoctor's own lists, caught by its tests)."""
    seen: set[str] = set()
    for stage in stages:
        if stage.name in seen:
            raise ValueError(f"stage {stage.name!r} is listed twice")
        later = [n for n in stage.needs if n not in seen]
        if later:
            raise ValueError(f"stage {stage.name!r} needs {', '.join(later)}, not listed before it")
        seen.add(stage.name)


def run_stages(stages: Sequence[Stage[R]], run: R) -> None:
    """The one loop: each stage in order, or its reason for not running in `run.skipped`."""
    check_order(stages)
    for stage in stages:
        why = stage.why_not(run)
        if why is not None:
            run.skipped[stage.name] = why
            continue
        stage.run(run)
        run.ran.append(stage.name)


def begin(
    target: str, options: Options, keep_dir: str | None, progress: bool, prefix: str
) -> tuple[Progress, str, float]:
    """What every analysis does first: check the target (one-line errors before any child starts),
    then its progress printer, its work folder and its deadline."""
    from ..target.load import precheck

    precheck(target)
    workdir = keep_dir or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(workdir, exist_ok=True)
    return Progress(enabled=progress), workdir, time.monotonic() + options.timeout_s


def analyze(
    stages: Sequence[Stage[R]],
    make: Callable[..., R],
    target: str,
    options: Options,
    *,
    prefix: str,
    keep_dir: str | None = None,
    progress: bool = False,
    questions: Questions = Questions(),
) -> tuple[Report, int]:
    """Run `stages` on a new run state (`make`: its class, given the target, options, questions,
    work folder, deadline and progress) and return the report the last stage assembled, with its
    exit code (4 when it has errors). The work folder (`prefix`: its name's start) is removed
    afterwards unless `keep_dir`."""
    prog, workdir, deadline = begin(target, options, keep_dir, progress, prefix)
    try:
        run = make(target, options, questions, workdir, deadline, prog)
        run_stages(stages, run)
    finally:
        prog.close()
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    if run.report is None:
        raise RuntimeError("no stage assembled the report")  # tcdoctor's own list is wrong
    return run.report, (EXIT_INCOMPLETE if run.report.errors else EXIT_OK)


S = TypeVar("S")
G = TypeVar("G")
T = TypeVar("T")


def execute(steps: Generator[S, G, T], do: Callable[[S], G]) -> T:
    """Run each step a plan yields with `do`, sending back what it gave; the plan's result."""
    given = None
    while True:
        try:
            step = steps.send(given)  # type: ignore[arg-type] # the first send is None
        except StopIteration as stop:
            return stop.value
        given = do(step)
