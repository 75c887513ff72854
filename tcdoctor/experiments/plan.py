"""What runs after the main analysis, and when: the parent's plan for its later children, read
from the phase results the cold and warm children streamed. The plan decides; run/launcher.py
executes. Each loop here is a generator that yields the next step (a timing-only process to
start, an experiment to run) and is sent back what it gave: the launcher starts the child, waits on
it, checks the deadline and draws the progress, and the plan never calls into the launcher.

- **The headline's timing processes** (`timing_steps`): bare timing-only processes while a
  question in play is undecided and within reach (report/processes/sequential.py `progress`:
  decided, or stopped as futile, at Pocock's level per look); a process excluded as disturbed is
  replaced once; the questions a gate asks (checks/questions.py `Questions`: each --min-speedup,
  --max-slowdown's comparison with the baseline's processes) keep the loop going until answered.
  Then, when every process page-faulted heavily, one more with glibc's thresholds pinned: a probe
  of the other allocator regime, never decided on. `time_processes` drives the same loop with a
  function (tests' canned processes).
- **The experiments' order and budget** (`in_turn`): each planned spec in a child of its own,
  within the deadline and, for those that count against it, the fix budget (`fix_budget`); the
  ones left untried say why.
- **What the warm child left** (`warm_experiments`: of the experiments the cold child planned,
  experiments/cold_plan.py, those that share its process); the guard-skipping stance, planned
  once the warm child measured guard cost (`stance_fix`); the headline across processes a fix run
  in a child of its own is compared with (`across_processes`).

Why generators: the timing loop's next step depends on every earlier result (the looks taken,
the processes replaced, the tries), which a generator keeps in its own locals; handing the plan a
function that starts a child made the plan call back into the launcher, and the launcher's own
duties (deadline, progress, events) ran inside the plan's loop.

Torch-free: the parent plans; nothing here starts a process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping
from typing import NamedTuple

from ..checks.questions import Questions
from ..options import FIX_BUDGET_FIRST_CALLS, FIX_BUDGET_MIN_S, Options
from ..report.events import Event
from ..report.phases.results import MainResults
from ..report.processes import claims, regimes, sequential
from ..thresholds import RULES, Rules
from .fixes import budget_used_up, plan_stance
from .specs import PHASE_PREFIX, Spec


class TimingStep(NamedTuple):
    """One timing-only process the plan asks for."""

    index: int  # among the timing-only processes (its name: sequential.extra_name)
    why: str  # why it runs (sequential: spread, undecided, a replacement, the pinned allocator)
    pinned: bool  # glibc's malloc thresholds pinned (the other allocator regime)


# What a timing step gave: (started: False once past the deadline, its timing result or None)
Timed = tuple[bool, dict | None]
# The timing loop: yields each step, is sent what it gave, returns the timing-only record
TimingSteps = Generator[TimingStep, Timed, dict | None]


def timing_steps(
    first: Mapping[str, dict | None],
    options: Options,
    rules: Rules,
    questions: Questions = Questions(),
    fixes_planned: bool = False,
) -> TimingSteps:
    """Yields each timing-only process to start (a TimingStep), is sent what it gave (`Timed`),
    and returns their record (`sequential.EXTRA_PHASE`'s data: their results and the sequence, how
    many at which level and why they stopped), or None when none ran and no sequence was looked
    at. `first`: the cold and warm processes' timing results (by phase,
    `sequential.PROCESS_OF_PHASE`), which count as the first processes; `rules`: the verdict's
    (min_speedup, equivalence_margin).

    The first look is taken once MIN_LOOK processes have timed, then one more process per look up
    to `--processes` (the cap), within the deadline; a process excluded as disturbed is replaced
    once. Each runs as a plain script calls the model, against the main cache. Processes timed at
    least (the cap allowing) before stopping early: SPREAD_FOR_ROWS when `fixes_planned` (tried
    fixes are judged with the spread between these processes), and `--min-processes` (a report to
    be a regression baseline: --max-slowdown knows the baseline's spread only from the baseline's
    own processes)."""
    rows0 = [
        regimes.row(name, regimes.AS_LAUNCHED, r)
        for phase, name in sequential.PROCESS_OF_PHASE.items()
        if (r := first.get(phase)) and r.get("speedup_ci")
    ]
    if not rows0:
        return None  # nothing timed the main row: another process would fail the same way
    cap, extra = options.processes, []
    loop = _Looks(cap, rules, questions, fixes_planned, options.min_processes)
    if cap < sequential.MIN_LOOK:  # too few to decide: the processes asked for, no looks
        while len(rows0) + len(extra) < cap and (yield from _one(extra, sequential.SPREAD_WHY)):
            pass
        stopped = "cap"
    else:
        stopped = yield from loop.run(rows0, extra)
    timed = len(rows0) + len(extra)
    why = sequential.pinned_why([first.get(p) or {} for p in sequential.PROCESS_OF_PHASE] + extra)
    if why and cap > 1:
        yield from _one(extra, why, pinned=True)
    seq = loop.record(timed, stopped) if cap >= sequential.MIN_LOOK else None
    if not extra and seq is None:
        return None
    return {"processes": extra, **({"sequence": seq} if seq else {})}


def _one(extra: list[dict], why: str, pinned: bool = False) -> Generator[TimingStep, Timed, bool]:
    """Ask for one more process (its result, if any, joins `extra`); False past the deadline."""
    started, result = yield TimingStep(len(extra), why, pinned)
    if result:
        extra.append(result)
    return started


class _Looks:
    """The sequential loop's looks: when to look, what a look decides, the sequence record."""

    def __init__(
        self,
        cap: int,
        rules: Rules,
        questions: Questions,
        fixes_planned: bool,
        min_processes: int,
    ):
        self.cap, self.rules, self.questions = cap, rules, questions
        self.level = sequential.look_level(cap)
        self.spread_for = max(sequential.SPREAD_FOR_ROWS if fixes_planned else 0, min_processes)
        self.margin = rules.equivalence_margin
        self.looked: list[int] = []  # the processes decided on at each look taken

    def run(self, rows0: list[dict], extra: list[dict]) -> Generator[TimingStep, Timed, str]:
        """Look, and ask for one more process, until decided, futile, the cap or the deadline:
        why the loop stopped."""
        cap, tries = self.cap, len(rows0)
        replaced: set[str] = set()  # excluded processes a later one was started for
        while True:
            rows = rows0 + [regimes.row(r["process"], regimes.AS_LAUNCHED, r) for r in extra]
            counted = regimes.classify(rows)
            step = self.look(counted) if len(counted) >= min(sequential.MIN_LOOK, cap) else "more"
            if step != "more":  # every question in play answered, or out of reach (futile)
                return step
            excluded = len(rows) - len(counted)
            if len(counted) >= cap or len(rows) >= cap + min(excluded, 2) or tries >= cap + 2:
                return "cap"
            tries += 1  # a process that fails is left out, and counts here
            if not (yield from _one(extra, self._why(rows, counted, replaced))):
                return "budget"

    def look(self, counted: list[dict]) -> str:
        """One look at the processes counted: "more", or why the loop may stop."""
        self.looked.append(len(counted))
        step = sequential.progress(
            counted,
            self.questions.speedups,
            self.rules.min_speedup,
            self.level,
            self.cap,
            self.margin,
        )
        if step != "more" and not self.questions.answered(counted, self.level):
            step = "more"  # check --max-slowdown's comparison is still open
        if step != "more" and len(counted) < min(self.spread_for, self.cap):
            step = "more"  # tried fixes are judged with this spread: enough to judge
        return step

    @staticmethod
    def _why(rows: list[dict], counted: list[dict], replaced: set[str]) -> str:
        """Why the next process runs; an excluded process is replaced once, and the replacement
        says whom it replaces."""
        why = (
            sequential.SPREAD_WHY
            if len(counted) < sequential.MIN_LOOK
            else sequential.UNDECIDED_WHY
        )
        gone = sequential.replaces(rows, replaced)
        if gone:
            replaced.add(gone)
            return sequential.replacement_why(gone)
        return why

    def record(self, timed: int, stopped: str) -> dict:
        """The sequence: the cap, the looks, the level, what was asked, why it stopped."""
        questions = self.questions
        return {
            "cap": self.cap,
            "looks": sequential.looks(self.cap),
            "level": self.level,
            "thresholds": sorted({1.0, self.rules.min_speedup, *questions.speedups}),
            **({"questions": questions.texts} if questions.texts else {}),
            "margin": self.margin,
            "timed": timed,
            "stopped": stopped,
            "looks_at": self.looked,
        }


def time_processes(
    first: Mapping[str, dict | None],
    options: Options,
    rules: Rules,
    time_one: Callable[[int, str, bool], Timed],
    questions: Questions = Questions(),
    fixes_planned: bool = False,
) -> dict | None:
    """`timing_steps` driven by `time_one(index, why, pinned)` (canned processes: the tests'
    simulations of the loop); the launcher runs the steps itself."""
    steps = timing_steps(first, options, rules, questions, fixes_planned)
    try:
        step = next(steps)
        while True:
            step = steps.send(time_one(*step))
    except StopIteration as stop:
        return stop.value


# The experiments' loop: yields (index in the plan, spec) for each to run, returns the ones left
# untried and the failure that says how many the deadline left unrun
InTurn = Generator[tuple[int, Spec], None, tuple[list[dict], dict | None]]


def in_turn(
    specs: list[Spec], fix_budget: float, fix_spent: float, deadline: float, timeout_s: float
) -> InTurn:
    """Each of `specs` to run, one after another, within the deadline and, for those that count
    against it, the fix budget (`fix_spent` of it already spent: the time from a step yielded to
    the loop resumed is what it spent): the ones left untried (each with why), and the failure
    that says how many the deadline left unrun (or None)."""
    not_tried = []
    for i, spec in enumerate(specs):
        if time.monotonic() > deadline - 1:
            return not_tried, {
                "phase": "strategies",
                "message": f"{len(specs) - i} strategy comparison(s) not run: the "
                f"{timeout_s:g}s limit was used up",
            }
        if spec.uses_fix_budget and fix_spent >= fix_budget:
            not_tried.append({"spec": spec.to_dict(), "why": budget_used_up(fix_budget)})
            continue
        started = time.monotonic()
        yield i, spec
        if spec.uses_fix_budget:
            fix_spent += time.monotonic() - started
    return not_tried, None


def fix_budget(compile_result: dict | None, options: Options) -> float:
    """Seconds the tried fixes may take: --fix-budget, else FIX_BUDGET_FIRST_CALLS cold first calls
    (FIX_BUDGET_MIN_S at least; options.py declares both, for the flag's help)."""
    if options.fix_budget_s is not None:
        return options.fix_budget_s
    first = (compile_result or {}).get("first_call_s") or 0.0
    return max(FIX_BUDGET_MIN_S, FIX_BUDGET_FIRST_CALLS * first)


def warm_experiments(
    events: list[Event], failure: dict | None
) -> tuple[set[str], float, list[dict]]:
    """What the warm process did with its experiments: the phases it ran (finished or failed, the one
    it died in included: a failure is that experiment's finding) or left untried, the fix budget they
    spent, and the untried ones' records. One it never started is run in a child of its own."""
    ran = {
        ev.phase
        for ev in events
        if ev.event in ("done", "failed") and str(ev.phase).startswith(PHASE_PREFIX)
    }
    if failure and str(failure.get("phase")).startswith(PHASE_PREFIX):
        ran.add(failure["phase"])
    spent = sum(
        ev.seconds or 0.0
        for ev in events
        if ev.event == "done"
        and ev.phase in ran
        and Spec.from_dict(ev.data["spec"]).uses_fix_budget
    )
    not_tried = [ev for ev in events if ev.event == "not_tried"]
    untried = [{"spec": ev.spec, "why": ev.why} for ev in not_tried]
    return ran | {ev.phase for ev in not_tried}, spent, untried


# the main analysis's phases a planned fix is compared with (report/phases/results.py)
BEFORE_PHASES = ("graph_breaks", "compile", "runtime", "numerics", "recompiles")


def stance_fix(results: Mapping[str, dict | None], options: Options) -> list[Spec]:
    """The guard-skipping stance, once the warm child measured guard cost (`results`: the profile
    and BEFORE_PHASES; planned by the parent: the cold child can't)."""
    from ..report.rules import guard_share
    from ..report.sections import guard_cost

    found = MainResults.of(results)
    cost = guard_cost(results.get("profile") or {})  # by removal where exact (probes/guard_ab.py)
    over, median = (
        cost["overhead_s_per_call"],
        cost.get("call_s") or found.runtime.compiled.median_s,
    )
    if not options.fixes or over is None or not median:
        return []
    return plan_stance(guard_share(over, median), RULES.guard_overhead_fraction, found.before)


def across_processes(results: Mapping[str, dict | None]) -> dict | None:
    """The main row's speedup across the processes that timed it (what a fix run in a child of its
    own is compared with), from the timing phases' results (`sequential.PROCESS_OF_PHASE` and
    `EXTRA_PHASE`)."""
    found = sequential.timed(dict(results))
    return claims.combine(found, sequential.sequence(dict(results))) if found else None
