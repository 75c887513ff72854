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

from ..errors import EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE, ChildFailed, UserCodeError
from ..experiments.fixes import budget_used_up, judged_across_processes
from ..experiments.specs import PHASE_PREFIX, FixSpec, Spec
from ..options import Options
from ..probes import isa_seed
from ..report.files import write_atomic
from ..report.model import Report
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


def _stance_fix(events: list[dict], options: Options) -> list[Spec]:
    """The guard-skipping stance, once the warm child measured guard cost (planned here: the cold child can't)."""
    from ..experiments.fixes import before_figures, plan_stance
    from ..report.rules import guard_share
    from ..report.sections import guard_cost
    from ..verdict.thresholds import RULES

    profile, runtime = done(events, "profile") or {}, done(events, "runtime") or {}
    cost = guard_cost(profile)  # by removal where exact (probes/guard_ab.py), else the profiler's
    over, median = (
        cost["overhead_s_per_call"],
        cost.get("call_s") or (runtime.get("compiled") or {}).get("median_s"),
    )
    if not options.fixes or over is None or not median:
        return []
    phases = ("graph_breaks", "compile", "runtime", "numerics", "recompiles")
    before = before_figures({name: done(events, name) for name in phases})
    return plan_stance(guard_share(over, median), RULES["guard_overhead_fraction"], before)


def _across_processes(events: list[dict]) -> dict | None:
    """The main row's speedup across the processes that timed it (what a fix run in a child of its
    own is compared with)."""
    from ..report.runtime_processes import EXTRA_PHASE, PROCESS_OF_PHASE, combine, sequence, timed

    results = {phase: done(events, phase) for phase in (*PROCESS_OF_PHASE, EXTRA_PHASE)}
    found = timed(results)
    return combine(found, sequence(results)) if found else None


def _go_signal(cold_events: list[dict], options: Options) -> dict:
    """What the warm child is told once the cold child is done: whether to run at all, the compiled
    call's time (its profiler budget), and the planned experiments it runs after its own phases
    (`Spec.shares_process`: each saves a process start, torch's import and build(), and compiles
    from the main cache) within the fix budget."""
    run = done(cold_events, "compile") is not None
    runtime = done(cold_events, "runtime") or {}
    planned = (done(cold_events, "plan") or {}).get("strategies", []) if run else []
    return {
        "run": run,
        "per_call_s": (runtime.get("compiled") or {}).get("median_s"),
        "experiments": [d for d in planned if Spec.from_dict(d).shares_process],
        "fix_budget_s": _fix_budget(cold_events, options),
    }


def _warm_experiments(
    events: list[dict], failure: dict | None
) -> tuple[set[str], float, list[dict]]:
    """What the warm process did with its experiments: the phases it ran (finished or failed, the one
    it died in included: a failure is that experiment's finding) or left untried, the fix budget they
    spent, and the untried ones' records. One it never started is run in a child of its own."""
    ran = {
        ev["phase"]
        for ev in events
        if ev.get("event") in ("done", "failed") and str(ev.get("phase")).startswith(PHASE_PREFIX)
    }
    if failure and str(failure.get("phase")).startswith(PHASE_PREFIX):
        ran.add(failure["phase"])
    spent = sum(
        ev.get("seconds") or 0.0
        for ev in events
        if ev.get("event") == "done"
        and ev.get("phase") in ran
        and Spec.from_dict(ev["data"]["spec"]).uses_fix_budget
    )
    untried = [
        {"spec": ev["spec"], "why": ev["why"]} for ev in events if ev.get("event") == "not_tried"
    ]
    return ran | {ev["phase"] for ev in events if ev.get("event") == "not_tried"}, spent, untried


def _fix_budget(events: list[dict], options: Options) -> float:
    if options.fix_budget_s is not None:
        return options.fix_budget_s
    first = (done(events, "compile") or {}).get("first_call_s") or 0.0
    return max(20.0, 4 * first)


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
    """The experiment children the parent runs one by one after the main analysis."""

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
        self, events: list[dict], thresholds: tuple[float, ...] = (), fixes_planned: bool = False
    ) -> list[dict]:
        """Bare timing-only processes while a question in play is undecided and within reach
        (runtime_processes.progress: decided, or stopped as futile):
        the first look once MIN_LOOK processes have timed (the cold and warm ones count), then one
        more per look up to `--processes` (the cap), within the deadline; a process excluded as
        disturbed is replaced once. Each runs as a plain script calls the model, against the main
        cache. Then, when every process page-faulted heavily, one more with glibc's thresholds
        pinned: a probe of the other allocator regime, never decided on (pinned_why). One done event
        joins their results and the sequence (how many, at which level, why they stopped).
        Processes timed at least (the cap allowing) before stopping early: SPREAD_FOR_ROWS when
        `fixes_planned` (tried fixes are judged with the spread between these processes), and
        `--min-processes` (a report to be a regression baseline: --max-slowdown knows the
        baseline's spread only from the baseline's own processes)."""
        from ..report import runtime_processes as rp
        from ..verdict.thresholds import RULES

        first = [
            rp.row(name, rp.AS_LAUNCHED, r)
            for phase, name in rp.PROCESS_OF_PHASE.items()
            if (r := done(events, phase)) and r.get("speedup_ci")
        ]
        if not first:
            return []  # nothing timed the main row: another process would fail the same way
        cap, level = self.options.processes, rp.look_level(self.options.processes)
        spread_for = max(rp.SPREAD_FOR_ROWS if fixes_planned else 0, self.options.min_processes)
        # a number is a speedup a gate judges; anything else a question with `answered(rows,
        # level)` (check --baseline --max-slowdown: report/regression.py's SlowdownQuestion)
        asked = [t for t in thresholds if not isinstance(t, (int, float))]
        thresholds = tuple(t for t in thresholds if isinstance(t, (int, float)))
        extra: list[dict] = []
        started, stopped, tries = time.monotonic(), "cap", len(first)
        while cap < rp.MIN_LOOK:  # too few to decide: the processes asked for, no looks
            if len(first) + len(extra) >= cap or not self._timing_child(
                extra, rp.SPREAD_WHY, False
            ):
                break
        replaced: set[str] = set()  # excluded processes a later one was started for
        looked: list[int] = []  # the processes decided on at each look taken
        while cap >= rp.MIN_LOOK:
            rows = first + [rp.row(r["process"], rp.AS_LAUNCHED, r) for r in extra]
            counted = rp.classify(rows)
            if len(counted) >= min(rp.MIN_LOOK, cap):
                looked.append(len(counted))
                step = rp.progress(
                    counted,
                    thresholds,
                    RULES["min_speedup"],
                    level,
                    cap,
                    RULES.get("equivalence_margin", rp.EQUIVALENCE_MARGIN),
                )
                if step != "more" and not all(q.answered(counted, level) for q in asked):
                    step = "more"  # check --max-slowdown's comparison is still open
                if step != "more" and len(counted) < min(spread_for, cap):
                    step = "more"  # tried fixes are judged with this spread: enough to judge
                if step != "more":  # every question in play answered, or out of reach (futile)
                    stopped = step
                    break
            excluded = len(rows) - len(counted)
            if len(counted) >= cap or len(rows) >= cap + min(excluded, 2) or tries >= cap + 2:
                break
            why = rp.SPREAD_WHY if len(counted) < rp.MIN_LOOK else rp.UNDECIDED_WHY
            gone = rp.replaces(rows, replaced)
            if gone:  # an excluded process is replaced, and the replacement says whom it replaces
                why = rp.replacement_why(gone)
                replaced.add(gone)
            tries += 1  # a process that fails is left out, and counts here
            if not self._timing_child(extra, why, pinned=False):
                stopped = "budget"
                break
        timed = len(first) + len(extra)
        why = rp.pinned_why([done(events, p) or {} for p in rp.PROCESS_OF_PHASE] + extra)
        if why and cap > 1:
            self._timing_child(extra, why, pinned=True)
        seq = (
            {
                "cap": cap,
                "looks": rp.looks(cap),
                "level": level,
                "thresholds": sorted({1.0, RULES["min_speedup"], *thresholds}),
                **({"questions": [q.text for q in asked]} if asked else {}),
                "margin": RULES.get("equivalence_margin", rp.EQUIVALENCE_MARGIN),
                "timed": timed,
                "stopped": stopped,
                "looks_at": looked,
            }
            if cap >= rp.MIN_LOOK
            else None
        )
        if not extra and seq is None:
            return []
        return [
            {
                "event": "done",
                "phase": rp.EXTRA_PHASE,
                "seconds": time.monotonic() - started,
                "data": {"processes": extra, **({"sequence": seq} if seq else {})},
            }
        ]

    def _timing_child(self, extra: list[dict], why: str, pinned: bool) -> bool:
        """Run one timing-only process; its result is appended to `extra`. False past the deadline."""
        from ..experiments.fixes import MALLOC_PINNED
        from ..report.runtime_processes import EXTRA_PHASE, PINNED_ENV_LABEL, extra_name

        if time.monotonic() > self.deadline - 1:
            return False
        i = len(extra)
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
                env=PINNED_ENV_LABEL if pinned else "as launched",
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
        result = done(t_events, EXTRA_PHASE)
        if result:
            extra.append(result)
        return True

    def children(
        self,
        plan: list[Spec],
        fix_budget: float,
        fix_spent: float,
        events: list[dict],
        failures: list[dict],
    ) -> list[dict]:
        """Run each spec of `plan` in a child of its own (its events and failures appended), within
        the deadline and, for those that count against it, the fix budget; the ones left untried."""
        not_tried = []
        for i, spec in enumerate(plan):
            if time.monotonic() > self.deadline - 1:
                failures.append(
                    {
                        "phase": "strategies",
                        "message": f"{len(plan) - i} strategy comparison(s) not run: the "
                        f"{self.options.timeout_s:g}s limit was used up",
                    }
                )
                break
            if spec.uses_fix_budget and fix_spent >= fix_budget:
                not_tried.append({"spec": spec.to_dict(), "why": budget_used_up(fix_budget)})
                continue
            started = time.monotonic()
            s_events, s_failure = self._child(i, len(plan), spec)
            events += measured(s_events)
            if s_failure:
                failures.append(s_failure)
            if spec.uses_fix_budget:
                fix_spent += time.monotonic() - started
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
    thresholds: tuple[float, ...] = (),
) -> tuple[Report, int]:
    """Run the children and assemble the report; `progress` writes each phase to stderr as it
    finishes. `thresholds`: speedups a gate will judge (check --min-speedup), which the headline's
    processes must also decide (run/launcher.py's extra_timing)."""
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
                _touch(go, _go_signal(cold.events(), options))
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
        fix_budget, fix_spent, not_tried = _fix_budget(events, options), 0.0, []
        handled: set[str] = set()  # phases of experiments the warm process ran or left untried
        if warm:
            warm_events, warm_failure = warm.finish()
            prog.feed("warm", warm_events)
            if go_sent and warm_failure:
                failures.append(warm_failure)
            events += measured(warm_events)
            handled, fix_spent, not_tried = _warm_experiments(warm_events, warm_failure)
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
        events += run.extra_timing(events, thresholds, fixes_planned)
        # breaks in the user's code with no mechanical patch: listed with why, no child
        not_tried += (done(events, "plan") or {}).get("patches_not_planned") or []
        plan = [s for s in map(Spec.from_dict, planned) if s.phase not in handled]
        plan += _stance_fix(events, options)
        if any(isinstance(s, FixSpec) for s in plan):  # the bootstrap only where a fix is judged
            across = _across_processes(events)
            plan = [judged_across_processes(s, across) for s in plan]
        not_tried += run.children(plan, fix_budget, fix_spent, events, failures)
        if not_tried:
            events.append(
                {"event": "done", "phase": "fixes_not_tried", "data": {"not_tried": not_tried}}
            )
        report = assemble(target, options.to_dict(), events, failures)
    finally:
        prog.close()
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return report, (EXIT_INCOMPLETE if report.errors else EXIT_OK)
