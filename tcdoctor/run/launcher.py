"""Parent side: run the analysis in child processes with a deadline, and keep whatever finished.

The run is `STAGES`, run by run/stages.py's one loop (the same loop runs a distributed analysis,
run/distributed.py): the cold child's cache folder (`cache`), the main analysis (`main`), the
headline's timing-only processes (`timing`), the experiments (`experiments`), the serving
section's processes when the target gives a traffic (`serving`; a Generation's before the
experiments, `generation`: its generation is the subject), the report (`report`).
Adding a stage is one record in `STAGES` and its function.

The main analysis: the cold child measures everything that needs an empty inductor cache; a warm
child compiles afterwards against the same cache dir in a fresh process (what a restarted server
pays) and runs the profiler phases. The warm child is started together with the cold one so that
its `import torch` overlaps the cold child's; it then waits for its go message (run/spec.py
`WarmGo`), and the cold child waits for the warm child's import to finish before compiling, so no
measured phase overlaps other work. A crash, hang, OOM or kill of either child still yields a
report of every finished phase.

Experiments (planned by the cold child, experiments/cold_plan.py; the stance fix by the parent
once the warm child measured guards): those that need nothing set at process start
(`Spec.shares_process`: config fixes, the ablation) go to the warm child with its go message and
run there after its own phases, within the fix budget; the rest run one by one in children of their
own, each starting from a copy of the main cache (or an empty one: `Spec.fresh_cache`). One the warm
child never started runs in a child. What runs when, in which order and within which budget (the
headline's timing-only processes, the experiments) is experiments/plan.py's: its loops yield each
step, which `_Experiments` executes (run/stages.py `execute`), and this module keeps the events.

Inductor's CPU ISA probe (probes/isa_probe.py) is paid by the cold child alone, which stays what a
fresh container pays and measures it: an empty experiment folder starts from this machine's probed
folder (run/isa_seed.py), kept by a cold child once per machine and torch version, and its row
says so (`units.MACHINE_PROBED_CACHE`); `--isa-probe none` seeds the cold child's folder too,
`every` seeds nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

from ..checks.questions import Questions
from ..errors import EXIT_USAGE, ChildFailed, UserCodeError
from ..experiments import plan
from ..experiments.cold_plan import ExperimentPlan
from ..experiments.fixes import ACROSS_PROCESSES, judged
from ..experiments.specs import PHASE_PREFIX, FixSpec, Spec
from ..options import Options
from ..report.events import Event
from ..report.files import write_atomic
from ..report.model import Report
from ..report.processes.regimes import AS_LAUNCHED, PINNED_ENV_LABEL
from ..report.processes.sequential import EXTRA_PHASE, PROCESS_OF_PHASE, extra_name
from ..report.sections import CompileTime, IsaProbe, Runtime
from ..thresholds import RULES
from ..units import MACHINE_PROBED_CACHE
from . import isa_seed, stages
from .assemble import assemble
from .process import (
    OUTPUT_TAIL_CHARS,
    PROGRESS_EVERY_S,
    TIMED_PROGRESS_EVERY_S,
    ChildProcess,
    child_command,
    done,
    exited_message,
    fatal_event_error,
    finished,
    last_started,
    measured,
    stack_dump_after,
    stopped_at,
    timed_out_message,
    wait_exit,
)
from .progress import Progress
from .spec import ChildSpec, ExperimentRun, TimingProcess, WarmGo, WarmHandshake
from .stages import Run, Stage, Where, execute
from .stream import read_events


class Child(ChildProcess):
    """One analysis process (cold, warm, or a strategy/fix child): its spec, files, and how it ended."""

    def __init__(
        self,
        role: str,
        target: str,
        options: Options,
        workdir: str,
        cache_dir: str,
        deadline: float,
        tag: str | None = None,
        extra_env: dict[str, str] | None = None,
        *,
        wait_for: str | None = None,
        warm: WarmHandshake | None = None,
        timing: TimingProcess | None = None,
        strategy: ExperimentRun | None = None,
    ):
        """`extra_env`: variables set in the child's environment before it starts (a tried fix that lives
        there: tried.allocator_fixes). The rest are its role's own ChildSpec fields (run/spec.py),
        each given for its role only: the cold child's `wait_for`, the warm child's `warm`, a timing
        child's `timing`, a strategy child's `strategy`."""
        self.role, self.options = role, options
        self._events: list[Event] = []
        self._events_size = -1
        self.paths = {
            k: os.path.join(workdir, f"{tag or role}.{k}")
            for k in ("events", "stacks", "log", "spec")
        }
        self.spec = ChildSpec(
            target=target,
            role=role,
            options=options,
            cache_dir=cache_dir,
            events_path=self.paths["events"],
            stacks_path=self.paths["stacks"],
            dump_after_s=stack_dump_after(deadline, margin_s=1.5, min_left_s=3),
            wait_for=wait_for,
            warm=warm,
            timing=timing,
            strategy=strategy,
        )
        super().__init__(
            child_command(self.paths["spec"]),
            self.spec,
            self.paths["spec"],
            self.paths["log"],
            cache_dir=cache_dir,
            trace_dir=os.path.join(options.torch_trace, tag or role)
            if options.torch_trace
            else None,
            extra_env=extra_env,
        )

    def events(self) -> list[Event]:
        """Its events so far, a new list each call; the file is parsed again only when it grew
        (progress asks often, and parsing every event each time costs the parent CPU)."""
        try:
            size = os.stat(self.paths["events"]).st_size
        except OSError:
            size = -1
        if size != self._events_size:
            self._events, self._events_size = read_events(self.paths["events"]), size
        return list(self._events)

    def finish(self) -> tuple[list[Event], dict | None]:
        """Its events, plus a failure record if it died without finishing."""
        rc = self.exit_code()
        events = self.events()
        if finished(events):
            return events, None
        phase, where = stopped_at(events, self.paths["stacks"])
        if self.timed_out:
            msg = timed_out_message(self.options.timeout_s, phase, where)
        else:
            msg = exited_message(rc, phase, where)
        failure: dict = {"phase": phase, "message": msg, "where": where}
        if not self.timed_out:
            failure["output_tail"] = self.log_tail(8)[-OUTPUT_TAIL_CHARS:]
        return events, failure


def _touch(path: str, payload: dict) -> None:
    write_atomic(path, json.dumps(payload))  # the child never reads half a file


def _results(events: list[Event], phases: tuple[str, ...]) -> dict[str, dict | None]:
    """The data of each of `phases` that finished (None where it did not): what plan.py reads."""
    return {phase: done(events, phase) for phase in phases}


# what the go message is made from (the cold child's) and what the stance fix is planned from
GO_PHASES = ("compile", "runtime", "plan")
STANCE_PHASES = ("profile", *plan.BEFORE_PHASES)


# Phases in which a process times calls: the parent wakes less often while one runs (process.py)
TIMED_PHASES = ("runtime", "runtime_warm")


def _show(prog: Progress, cold: Child, warm: Child | None) -> float:
    """Feed and redraw the progress; the seconds until the next redraw (longer while a child
    times calls: TIMED_PROGRESS_EVERY_S)."""
    timed = False
    for name, child in (("cold", cold), ("warm", warm)):
        if child:
            events = child.events()
            prog.feed(name, events)
            phase = last_started(events) or ""
            timed = timed or phase in TIMED_PHASES or phase.startswith(PHASE_PREFIX)
    prog.tick()
    return TIMED_PROGRESS_EVERY_S if timed else PROGRESS_EVERY_S


COPY_CACHE = "copy of the main analysis's cache"


def _experiment_cache(
    cache_dir: str, workdir: str, i: int, spec: Spec, seed_from: str | None = None
) -> tuple[str, str]:
    """The cache folder experiment child `i` starts with, and how it starts (isa_seed.start_folder).

    A copy of the main analysis's Inductor/AOTAutograd/Triton cache (made once the warm child is
    done, so nothing writes to it while it is copied): graphs the experiment leaves unchanged are
    cache hits, as in the user's own process, and an environment-only fix compiles nothing. Never
    the original, so the warm-cache figure stays the warm child's own. A spec that measures a cold
    compile (`Spec.fresh_cache`) gets an empty folder, seeded with this machine's probed folder
    when `seed_from` names where those live and there is one (run/isa_seed.py: Inductor's CPU
    ISA probe is not built again; its first call is a machine's that has compiled before). A
    folder prepared here notes what it started as and when (`isa_seed.mark`), so the probe builds
    its child makes are told from what was copied in (`isa_probe.paid`)."""
    path = os.path.join(workdir, f"cache-strategy-{i}")
    copy_of = None if spec.fresh_cache else cache_dir
    return path, isa_seed.start_folder(path, seed_from, copy_of, COPY_CACHE)


class _Experiments:
    """The children the parent starts after the main analysis, one at a time, as
    experiments/plan.py plans them: the headline's timing-only processes and the experiments. The
    plan's loops yield each step; this class runs it (`execute`) and sends back what it gave."""

    def __init__(
        self,
        target: str,
        options: Options,
        workdir: str,
        cache_dir: str,
        deadline: float,
        prog: Progress,
        seed_from: str | None = None,
        probe_s: float | None = None,
    ):
        """`seed_from`: where this machine's probed folders live (isa_probe.root()), None to seed
        nothing; `probe_s`: the probe's builds the cold analysis process paid (its isa_probe's
        build_s), what a seeded child's row adds back for a fresh container's first call."""
        self.target, self.options, self.workdir = target, options, workdir
        self.cache_dir, self.deadline, self.prog = cache_dir, deadline, prog
        self.seed_from, self.probe_s = seed_from, probe_s

    def extra_timing(
        self, events: list[Event], questions: Questions, fixes_planned: bool = False
    ) -> list[Event]:
        """The timing-only processes plan.timing_steps asks for, each started here; one done
        event joins their results and the sequence."""
        started = time.monotonic()
        first = _results(events, tuple(PROCESS_OF_PHASE))
        steps = plan.timing_steps(first, self.options, RULES, questions, fixes_planned)
        data = execute(steps, lambda step: self._timing_child(*step))
        if data is None:
            return []
        seconds = time.monotonic() - started
        return [Event(event="done", phase=EXTRA_PHASE, seconds=seconds, data=data)]

    def _timing_child(self, i: int, why: str, pinned: bool) -> tuple[bool, dict | None]:
        """Run timing-only process `i`: (False past the deadline, its result or None)."""
        from ..experiments.fixes import MALLOC_PINNED

        if time.monotonic() > self.deadline - 1:
            return False, None
        child = Child(
            "timing",
            self.target,
            self.options,
            self.workdir,
            self.cache_dir,
            self.deadline,
            tag=f"timing-{i}",
            extra_env=dict(MALLOC_PINNED) if pinned else None,
            timing=TimingProcess(
                why=why,
                env=PINNED_ENV_LABEL if pinned else AS_LAUNCHED,
                process=extra_name(i),
            ),
        )

        self.prog.new_child("timing")

        def show() -> None:  # its lines as they happen: a neighbour started meanwhile is named
            self.prog.feed("timing", child.events())
            self.prog.tick()

        child.wait(self.deadline, tick=show if self.prog.enabled else None)
        t_events, _ = child.finish()
        self.prog.feed("timing", t_events)
        return True, done(t_events, EXTRA_PHASE)

    def children(
        self,
        specs: list[Spec],
        fix_budget: float,
        fix_spent: float,
        events: list[Event],
        failures: list[dict],
    ) -> list[dict]:
        """Run each of `specs` in a child of its own, in plan.in_turn's order and budget (its
        events and failures appended); the ones left untried."""

        def run_one(step: tuple[int, Spec]) -> None:
            s_events, s_failure = self._child(step[0], len(specs), step[1])
            events.extend(measured(s_events))
            if s_failure:
                failures.append(s_failure)

        steps = plan.in_turn(specs, fix_budget, fix_spent, self.deadline, self.options.timeout_s)
        not_tried, late = execute(steps, run_one)
        if late:
            failures.append(late)
        return not_tried

    def _child(self, i: int, total: int, spec: Spec) -> tuple[list[Event], dict | None]:
        self.prog.strategy(f"strategy-{i}", i + 1, total, spec)
        child_cache, cache_start = _experiment_cache(
            self.cache_dir, self.workdir, i, spec, self.seed_from
        )
        probed = cache_start == MACHINE_PROBED_CACHE
        child = Child(
            "strategy",
            self.target,
            self.options,
            self.workdir,
            child_cache,
            self.deadline,
            tag=f"strategy-{i}",
            extra_env=spec.child_env,
            strategy=ExperimentRun(spec, cache_start, self.probe_s if probed else None),
        )
        child.wait(self.deadline, tick=self.prog.tick if self.prog.enabled else None)
        s_events, s_failure = child.finish()
        self.prog.feed(f"strategy-{i}", s_events)
        return s_events, s_failure


# -- the stages of a single-process analysis ----------------------------------------------------


@dataclasses.dataclass
class Analysis(Run):
    """A single-process analysis's state: `Run`'s, and what its stages hand on."""

    cache_dir: str = ""  # the main analysis's inductor cache (the cold and warm children's)
    plan: ExperimentPlan = ExperimentPlan()  # what the cold child planned
    warm_ran: set[str] = dataclasses.field(default_factory=set)  # experiment phases the warm ran
    fix_spent: float = 0.0  # the fix budget the warm process spent
    not_tried: list[dict] = dataclasses.field(default_factory=list)  # experiments left untried


def _cache(run: Analysis) -> None:
    """The main analysis's cache folder: empty (a fresh container), or seeded (`--isa-probe none`)."""
    run.cache_dir = os.path.join(run.workdir, "inductor-cache")
    isa_seed.seed_cold(run.cache_dir, run.options)


def _child(run: Analysis, role: str, **kw) -> Child:
    return Child(role, run.target, run.options, run.workdir, run.cache_dir, run.deadline, **kw)


def _main(run: Analysis) -> None:
    """The cold and the warm child, started together (the warm first: its import overlaps the
    cold one's), watched until both ended; their events, failures and the cold child's plan."""
    ready, go = os.path.join(run.workdir, "warm.ready"), os.path.join(run.workdir, "warm.go")
    warm = _child(run, "warm", warm=WarmHandshake(ready, go)) if run.options.warm else None
    cold = _child(run, "cold", wait_for=ready if warm else None)
    go_sent = _watch(run, cold, warm, ready, go)
    _take_cold(run, cold)
    if warm:
        _take_warm(run, warm, go_sent)
    run.plan = ExperimentPlan.from_data(done(run.events, "plan"))


def _watch(run: Analysis, cold: Child, warm: Child | None, ready: str, go: str) -> bool:
    """Wait for both children, drawing the progress, killing both at the deadline, and sending the
    warm child its go message once the cold child ended; whether it was sent."""
    go_sent, next_progress, prog, deadline = False, 0.0, run.prog, run.deadline
    while cold.running() or (warm and warm.running()):
        if prog.enabled and time.monotonic() >= next_progress:
            next_progress = time.monotonic() + _show(prog, cold, warm)
        if time.monotonic() > deadline:
            for c in (cold, warm):
                if c and c.running():
                    c.kill(timed_out=True)
            break
        if warm and not warm.running() and not os.path.exists(ready):
            _touch(ready, {"warm_died": True})  # never leave the cold child waiting
        if warm and not go_sent and not cold.running():
            warm_go(cold.events(), run.options).write(go)
            go_sent = True
        # no poll: block until a child exits, the next redraw or the deadline
        wake = min(deadline, next_progress) if prog.enabled else deadline
        wait_exit([c for c in (cold, warm) if c and c.running()], wake - time.monotonic())
    return go_sent


def warm_go(cold_events: list[Event], options: Options) -> WarmGo:
    """The warm child's go message, from the cold child's compile, runtime and plan results: run
    only if the cold child compiled; its profiler budget from the compiled call's time; the planned
    experiments that share its process (ExperimentPlan.shared), within the fix budget."""
    cold = _results(cold_events, GO_PHASES)
    ran = cold["compile"] is not None
    return WarmGo(
        run=ran,
        per_call_s=Runtime.from_dict(cold["runtime"]).compiled.median_s,
        experiments=ExperimentPlan.from_data(cold["plan"]).shared if ran else (),
        fix_budget_s=plan.fix_budget(cold["compile"], options),
    )


def _take_cold(run: Analysis, cold: Child) -> None:
    """The cold child's events and failure; a fatal record, a death at start-up or inside the
    user's build() ends the analysis (one line, its exit code)."""
    events, failure = cold.finish()
    run.prog.feed("cold", events)
    error = fatal_event_error(events)
    if error:
        raise error
    if failure and failure["phase"] == "startup":  # died before its first phase: exit 2, as ever
        raise ChildFailed(failure["message"], EXIT_USAGE)
    if failure and failure["phase"] == "load":  # died inside the user's build()
        raise UserCodeError(failure["message"])
    run.events += events
    run.failures += [failure] if failure else []


def _take_warm(run: Analysis, warm: Child, go_sent: bool) -> None:
    """The warm child's measured events, its failure (once it was told to run), and what it did
    with the experiments it was given."""
    warm_events, warm_failure = warm.finish()
    run.prog.feed("warm", warm_events)
    if go_sent and warm_failure:
        run.failures.append(warm_failure)
    run.events += measured(warm_events)
    run.warm_ran, run.fix_spent, run.not_tried = plan.warm_experiments(warm_events, warm_failure)


def _children(run: Analysis) -> _Experiments:
    """The runner of the later children: seeded from this machine's probed folder unless
    `--isa-probe every`, with the ISA probe's builds the cold process paid."""
    probe = CompileTime.from_dict(done(run.events, "compile")).isa_probe or IsaProbe()
    return _Experiments(
        run.target,
        run.options,
        run.workdir,
        run.cache_dir,
        run.deadline,
        run.prog,
        seed_from=isa_seed.seed_from(run.options),
        probe_s=probe.build_s,
    )


def _timing(run: Analysis) -> None:
    """The headline's timing-only processes (experiments/plan.py timing_steps)."""
    run.events += _children(run).extra_timing(run.events, run.questions, run.plan.fixes_planned)


def _experiments(run: Analysis) -> None:
    """The planned experiments the warm process did not run and the stance fix, each in a child of
    its own (a fix judged against the headline across processes); those left untried, with why."""
    # breaks in the user's code with no mechanical patch: listed with why, no child
    run.not_tried += run.plan.patches_not_planned
    specs = [s for s in run.plan.specs if s.phase not in run.warm_ran]
    specs += plan.stance_fix(_results(run.events, STANCE_PHASES), run.options)
    if any(isinstance(s, FixSpec) for s in specs):  # the bootstrap only where a fix is judged
        across = plan.across_processes(_results(run.events, (*PROCESS_OF_PHASE, EXTRA_PHASE)))
        specs = [judged(s, across, ACROSS_PROCESSES) for s in specs]
    budget = plan.fix_budget(done(run.events, "compile"), run.options)
    children = _children(run).children(specs, budget, run.fix_spent, run.events, run.failures)
    run.not_tried += children
    if run.not_tried:
        data = {"not_tried": run.not_tried}
        run.events.append(Event(event="done", phase="fixes_not_tried", data=data))


NO_TRAFFIC = "no traffic: the target's Workload gives none and --traffic is not set"
NOT_GENERATION = "not a Generation: the serving section runs after the experiments"
RAN_FIRST = "a Generation's serving section ran before the experiments (stage 'generation')"


def _traffic(run: Analysis) -> str | None:
    """Why the serving section does not run after the experiments (None: a traffic is asked for,
    not a Generation's: that one runs before them, `_generation`)."""
    from .serving.section import asked  # imported only here: most analyses have no traffic

    ask = asked(run.options, _workload(run))
    return NO_TRAFFIC if not ask else RAN_FIRST if ask.generation else None


def _generation(run: Analysis) -> str | None:
    """Why the serving section does not run before the experiments: only a Generation's does.
    Its generation is the target's subject, and each of its processes compiles from cold (the
    generate part's compiled side, the proof, each cache strategy): run after the experiments, it
    got what they left of --timeout (on samples/generate.py with Inductor at load 4-6, 3 s and
    7 s of 600: exit 4, nothing of the generation measured). Run first, the experiments get what
    it leaves, and those left unrun say so (experiments/plan.py `in_turn`)."""
    from .serving.section import asked  # imported only here: most analyses have no traffic

    ask = asked(run.options, _workload(run))
    return None if ask and ask.generation else NOT_GENERATION


def _workload(run: Run) -> dict | None:
    """The cold process's environment record of the workload (its traffic, its kind)."""
    return (done(run.events, "environment") or {}).get("workload")


def _serving(run: Analysis) -> None:
    """The serving section (issue 55): the target's traffic replayed in fresh processes of its own,
    one stage record per part (run/serving/)."""
    from . import serving

    serving.stage(run, _workload(run))


def _report(run: Run) -> None:
    """The report, assembled from every stage's events and failures."""
    run.report = assemble(run.target, run.options.to_dict(), run.events, run.failures)


# The single-process analysis, stage by stage (run/stages.py runs them in order)
STAGES: tuple[Stage, ...] = (
    Stage("cache", Where.PARENT, _cache),
    Stage("main", Where.CHILDREN, _main, needs=("cache",)),
    Stage("timing", Where.CHILDREN, _timing, needs=("main",)),
    Stage("generation", Where.CHILDREN, _serving, needs=("main",), when=_generation),
    Stage("experiments", Where.CHILDREN, _experiments, needs=("main",)),
    Stage("serving", Where.CHILDREN, _serving, needs=("main",), when=_traffic),
    Stage("report", Where.PARENT, _report),
)


def analyze_target(
    target: str,
    options: Options,
    keep_dir: str | None = None,
    progress: bool = False,
    questions: Questions = Questions(),
) -> tuple[Report, int]:
    """Run `STAGES` and return the report and its exit code; `progress` writes each phase to stderr
    as it finishes. `questions`: what a gate will judge (check --min-speedup, --max-slowdown),
    which the headline's processes must also decide (experiments/plan.py's timing_steps)."""
    how = {"keep_dir": keep_dir, "progress": progress, "questions": questions}
    return stages.analyze(STAGES, Analysis, target, options, prefix="tcdoctor-", **how)
