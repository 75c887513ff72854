"""Parent side: run the analysis in child processes with a deadline, and keep whatever finished.

The cold child measures everything that needs an empty inductor cache; a warm child compiles
afterwards against the same cache dir in a fresh process (what a restarted server pays) and
runs the profiler phases. The warm child is started together with the cold one so that its
`import torch` overlaps the cold child's; it then waits for a go signal, and the cold child
waits for the warm child's import to finish before compiling, so no measured phase overlaps
other work. A crash, hang, OOM or kill of either child still yields a report of every
finished phase.

Experiments (planned by the cold child; the stance fix by the parent once the warm child measured
guards): those that need nothing set at process start (`Spec.shares_process`: config fixes, the
ablation) go to the warm child with its go signal and run there after its own phases, within the
fix budget; the rest run one by one in children of their own, each starting from a copy of the main
cache (or an empty one: `Spec.fresh_cache`). One the warm child never started runs in a child.
What runs when, in which order and within which budget (the headline's timing-only processes,
the experiments, the go signal) is experiments/plan.py's; this module starts the children it asks
for and keeps their events.

Inductor's CPU ISA probe (probes/isa_probe.py) is paid by the cold child alone, which stays what a
fresh container pays and measures it: an empty experiment folder starts from this machine's probed
folder (probes/isa_seed.py), kept by a cold child once per machine and torch version, and its row
says so (`units.MACHINE_PROBED_CACHE`); `TCDOCTOR_ISA_PROBE=none` seeds the cold child's folder too
(the test suite), `every` seeds nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time

from ..checks.questions import Questions
from ..errors import EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE, ChildFailed, UserCodeError
from ..experiments import plan
from ..experiments.fixes import judged_across_processes
from ..experiments.specs import PHASE_PREFIX, FixSpec, Spec
from ..options import Options
from ..probes import isa_seed
from ..report.files import write_atomic
from ..report.model import Report
from ..report.processes.regimes import AS_LAUNCHED, PINNED_ENV_LABEL
from ..report.processes.sequential import EXTRA_PHASE, PROCESS_OF_PHASE, extra_name
from ..units import MACHINE_PROBED_CACHE
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
from .spec import ChildSpec, ExperimentRun, TimingProcess, WarmHandshake
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
        self._events: list[dict] = []
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

    def events(self) -> list[dict]:
        """Its events so far, a new list each call; the file is parsed again only when it grew
        (progress asks often, and parsing every event each time costs the parent CPU)."""
        try:
            size = os.stat(self.paths["events"]).st_size
        except OSError:
            size = -1
        if size != self._events_size:
            self._events, self._events_size = read_events(self.paths["events"]), size
        return list(self._events)

    def finish(self) -> tuple[list[dict], dict | None]:
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


def _results(events: list[dict], phases: tuple[str, ...]) -> dict[str, dict | None]:
    """The data of each of `phases` that finished (None where it did not): what plan.py reads."""
    return {phase: done(events, phase) for phase in phases}


# what the go signal is made from (the cold child's) and what the stance fix is planned from
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
    """The cache folder experiment child `i` starts with, and how it starts.

    A copy of the main analysis's Inductor/AOTAutograd/Triton cache (made once the warm child is
    done, so nothing writes to it while it is copied): graphs the experiment leaves unchanged are
    cache hits, as in the user's own process, and an environment-only fix compiles nothing. Never
    the original, so the warm-cache figure stays the warm child's own. A spec that measures a cold
    compile (`Spec.fresh_cache`) gets an empty folder, seeded with this machine's probed folder
    when `seed_from` names where those live and there is one (probes/isa_seed.py: Inductor's CPU
    ISA probe is not built again; its first call is a machine's that has compiled before). A
    folder prepared here notes what it started as and when (`isa_seed.mark`), so the probe builds
    its child makes are told from what was copied in (`isa_seed.paid`)."""
    path = os.path.join(workdir, f"cache-strategy-{i}")
    if spec.fresh_cache or not os.path.isdir(cache_dir):
        if seed_from and isa_seed.seed(path, MACHINE_PROBED_CACHE, seed_from):
            return path, MACHINE_PROBED_CACHE
        return path, "empty"
    shutil.copytree(cache_dir, path, symlinks=True, dirs_exist_ok=True)
    isa_seed.mark(path, COPY_CACHE)
    return path, COPY_CACHE


class _Experiments:
    """The children the parent starts after the main analysis, one at a time, as
    experiments/plan.py plans them: the headline's timing-only processes and the experiments."""

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
        """`seed_from`: where this machine's probed folders live (isa_seed.root()), None to seed
        nothing; `probe_s`: the probe's builds the cold analysis process paid (its isa_probe's
        build_s), what a seeded child's row adds back for a fresh container's first call."""
        self.target, self.options, self.workdir = target, options, workdir
        self.cache_dir, self.deadline, self.prog = cache_dir, deadline, prog
        self.seed_from, self.probe_s = seed_from, probe_s

    def extra_timing(
        self, events: list[dict], questions: Questions, fixes_planned: bool = False
    ) -> list[dict]:
        """The timing-only processes plan.time_processes asks for, each started here; one done
        event joins their results and the sequence."""
        from ..verdict.thresholds import RULES

        started = time.monotonic()
        first = _results(events, tuple(PROCESS_OF_PHASE))
        data = plan.time_processes(
            first, self.options, RULES, self._timing_child, questions, fixes_planned
        )
        if data is None:
            return []
        seconds = time.monotonic() - started
        return [{"event": "done", "phase": EXTRA_PHASE, "seconds": seconds, "data": data}]

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
        events: list[dict],
        failures: list[dict],
    ) -> list[dict]:
        """Run each of `specs` in a child of its own, in plan.run_in_turn's order and budget (its
        events and failures appended); the ones left untried."""

        def run_one(i: int, spec: Spec) -> None:
            s_events, s_failure = self._child(i, len(specs), spec)
            events.extend(measured(s_events))
            if s_failure:
                failures.append(s_failure)

        not_tried, late = plan.run_in_turn(
            specs, fix_budget, fix_spent, self.deadline, self.options.timeout_s, run_one
        )
        if late:
            failures.append(late)
        return not_tried

    def _child(self, i: int, total: int, spec: Spec) -> tuple[list[dict], dict | None]:
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


def analyze_target(
    target: str,
    options: Options,
    keep_dir: str | None = None,
    progress: bool = False,
    questions: Questions = Questions(),
) -> tuple[Report, int]:
    """Run the children and assemble the report; `progress` writes each phase to stderr as it
    finishes. `questions`: what a gate will judge (check --min-speedup, --max-slowdown), which the
    headline's processes must also decide (experiments/plan.py's time_processes)."""
    who_pays = isa_seed.who_pays()  # TCDOCTOR_ISA_PROBE: a bad value is one line, before any child
    prog, workdir, deadline = begin(target, options, keep_dir, progress, "tcdoctor-")
    cache_dir = os.path.join(workdir, "inductor-cache")
    if who_pays == "none":  # the test suite: the cold process too starts from the probed folder
        isa_seed.seed(cache_dir, MACHINE_PROBED_CACHE)
    ready, go = os.path.join(workdir, "warm.ready"), os.path.join(workdir, "warm.go")
    try:
        warm = (
            Child(
                "warm", target, options, workdir, cache_dir, deadline, warm=WarmHandshake(ready, go)
            )
            if options.warm
            else None
        )
        cold = Child(
            "cold", target, options, workdir, cache_dir, deadline, wait_for=ready if warm else None
        )
        go_sent = False
        next_progress = 0.0
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
                _touch(go, plan.go_signal(_results(cold.events(), GO_PHASES), options))
                go_sent = True
            # no poll: block until a child exits, the next redraw or the deadline
            wake = min(deadline, next_progress) if prog.enabled else deadline
            wait_exit([c for c in (cold, warm) if c and c.running()], wake - time.monotonic())

        events, failure = cold.finish()
        prog.feed("cold", events)
        error = fatal_event_error(events)
        if error:
            raise error
        if (
            failure and failure["phase"] == "startup"
        ):  # died before its first phase: exit 2, as ever
            raise ChildFailed(failure["message"], EXIT_USAGE)
        if failure and failure["phase"] == "load":  # died inside the user's build()
            raise UserCodeError(failure["message"])
        failures = [failure] if failure else []
        fix_budget = plan.fix_budget(done(events, "compile"), options)
        fix_spent, not_tried = 0.0, []
        handled: set[str] = set()  # phases of experiments the warm process ran or left untried
        if warm:
            warm_events, warm_failure = warm.finish()
            prog.feed("warm", warm_events)
            if go_sent and warm_failure:
                failures.append(warm_failure)
            events += measured(warm_events)
            handled, fix_spent, not_tried = plan.warm_experiments(warm_events, warm_failure)
        probe = (done(events, "compile") or {}).get("isa_probe") or {}
        run = _Experiments(
            target,
            options,
            workdir,
            cache_dir,
            deadline,
            prog,
            seed_from=None if who_pays == "every" else isa_seed.root(),
            probe_s=probe.get("build_s"),
        )
        planned = (done(events, "plan") or {}).get("strategies", [])
        fixes_planned = any(isinstance(Spec.from_dict(d), FixSpec) for d in planned)
        events += run.extra_timing(events, questions, fixes_planned)
        # breaks in the user's code with no mechanical patch: listed with why, no child
        not_tried += (done(events, "plan") or {}).get("patches_not_planned") or []
        specs = [s for s in map(Spec.from_dict, planned) if s.phase not in handled]
        specs += plan.stance_fix(_results(events, STANCE_PHASES), options)
        if any(isinstance(s, FixSpec) for s in specs):  # the bootstrap only where a fix is judged
            across = plan.across_processes(_results(events, (*PROCESS_OF_PHASE, EXTRA_PHASE)))
            specs = [judged_across_processes(s, across) for s in specs]
        not_tried += run.children(specs, fix_budget, fix_spent, events, failures)
        if not_tried:
            events.append(
                {"event": "done", "phase": "fixes_not_tried", "data": {"not_tried": not_tried}}
            )
        from .serve import stage as serving_stage  # issue 55: absent without a traffic

        events += serving_stage(target, options, workdir, deadline, prog, events)
        report = assemble(target, options.to_dict(), events, failures)
    finally:
        prog.close()
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return report, (EXIT_INCOMPLETE if report.errors else EXIT_OK)
