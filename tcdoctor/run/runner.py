"""The driver of one analysis: the phases of its process, in order, each streamed as it finishes.

Each phase's measure lives with its probe (the declaration's `measure` in `report/phases/`, e.g.
`probes/numerics.py:phase_numerics`) and takes this runner as its context: the state the phases
share (the pristine copies, the eager subject, the compiled callable, the outputs numerics
compares) and the helpers they call (`fresh`, `call`, `torch_compile`, `call_and_snapshot`, ...,
and what the experiments layer gives the probes below it). The driver itself only orders the
phases (`report.phases.order`), applies the skip reasons, catches each failure (a fatal phase's
ends the process), and streams the events.

The cold child runs: environment → eager → graph_breaks → compile → cache_artifacts → runtime →
numerics → recompiles → drift (recompiles after everything measured on the compiled model: a hang in
the user's variants loses none of it; drift, when numerics call for it, compiles parts of the model
after the recompile sequence). The warm child (fresh process, same inductor cache) runs:
compile_warm → runtime_warm → memory → memory_graphs → profile. The in-process API runs the cold
child's phases but cache_artifacts, and memory, memory_graphs and profile (`report.phases.order`
gives each process's list). Later phases that need an earlier one's result are skipped with the
reason, never faked.

State: every subject is a fresh copy of what build() returned (`pristine.Pristine`), so no phase
sees a model that an earlier phase has already run: the eager reference call and the compiled
first call each start from that state with every RNG reset. Timing, memory and profile use
another fresh copy whose compiled wrapper finds the entry the first call made in Dynamo's cache
(a copy of the same class passes the same guards), so the copy that made the first call is left
as it was, and the recompile sequence continues from it: exactly the sequence a fresh process
runs, nothing compiled twice. Only when a later phase reset Dynamo (a fallback_random compile for a
random model) or compiled entries of its own (guards on an object's identity, e.g. an optimizer
the model holds) does the sequence start again from a fresh copy's first call.

Fidelity: before anything is measured (first thing in the environment phase of the cold child,
in compile_warm in the warm child), a fresh copy and the object build() returned are each called
once and compared (`Pristine.verify`); if the copy did other work (a lost attribute, state shared
with the original), every later copy is a rebuild instead, and `state` in the report says why.
The copy that check called becomes the eager phase's first call (its output and wall time), so it
costs one extra eager call, the original's. Only a child that ran build() itself calls the
original; the in-process API's object is the user's and is never called (not checked there).
A hang or crash in that first call is therefore reported in the environment phase (the stack
dumped on timeout still names the user's line).
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable

import torch

from ..errors import EXIT_USER_CODE
from ..experiments import strategies
from ..experiments.pair import question
from ..experiments.training import Subject
from ..options import Options
from ..probes import calls, first_call, memory, outputs
from ..report import phases
from ..report.events import Event
from ..report.phases import PhaseError, Skip
from ..target.pristine import Pristine, reset_rng_state
from ..target.userframes import describe_exception
from ..target.workload import Workload

__all__ = ["PhaseRunner", "Skip", "load_target"]

Sink = Callable[[dict], None]


def _measure_of(name: str) -> Callable[["PhaseRunner"], dict]:
    """The function a phase's declaration names ("module:function"), imported here, in the child."""
    module, _, function = phases.BY_NAME[name].measure.partition(":")
    return getattr(importlib.import_module(module), function)


class PhaseRunner:
    """The driver (`run`) and the context every phase's measure takes: what the phases share. The
    probes see it as `probes/context.PhaseContext` (a Protocol it satisfies, member for member:
    a member added here that a probe reads is added there too; tests/test_adding_a_probe.py checks).

    State: `workload`, `options`, `device`, `sync`, `label`, `pristine`, `results` (earlier
    phases' result dicts), `per_call_s`, `eager_subject`, `eager_out` / `compiled_out` (the
    snapshots numerics compares), `compiled` (the callable timing, memory and profile use),
    `sequence` (the copy that made the first compiled call, and its compiled callable),
    `first_call_metrics`, `entries_after_first_call`, `dynamo_reset`, `timing_process`.
    """

    def __init__(
        self,
        workload: Workload,
        options: Options,
        sink: Sink,
        per_call_hint_s: float | None = None,
        before_compile: Callable[[], Any] | None = None,
        rebuild: Callable[[], Any] | None = None,
        bare: bool = False,
    ):
        """`bare`: a timing-only process (`runtime_extra`), which calls the object build() returned
        as the user's script does: no pristine snapshot, no copies, no fidelity check, so nothing of
        tcdoctor's is allocated before its timing (the glibc heap's history decides whether a call
        re-faults its temporaries: issue 27's Adam step ran 11 ms after tcdoctor's copies and 24 ms
        in a plain script)."""
        self.before_compile = before_compile
        self.workload = workload
        self.options = options
        self.sink = sink
        self.device = calls.detect(workload.model, workload.call_args)
        workload.device_type = self.device.type
        self.pristine = None if bare else Pristine(workload, rebuild)
        self.owns_original = rebuild is not None  # a child that ran build(): the original is ours
        self._check_done = False
        self._checked: tuple[Subject, Any, float] | None = None  # the checked copy's first call
        if workload.kind == "train":
            self.label = "train step"
        else:
            m = workload.model
            self.label = (
                f"{type(m).__name__}.forward"
                if isinstance(m, torch.nn.Module)
                else getattr(m, "__name__", type(m).__name__)
            )
        self.sync = calls.synchronizer(self.device)
        self.eager_subject: Subject | None = None
        self.sequence: tuple[Subject, Any] | None = (
            None  # the copy that made the first compiled call, compiled
        )
        self.compiled: Any = None  # the compiled callable used for timing, memory and profile
        self.dynamo_reset = False  # set when a phase reset Dynamo after the first call
        self.entries_after_first_call = 0
        self.first_call_metrics: list | None = None  # CompilationMetrics of the first compiled call
        self.eager_out: list | None = None
        self.compiled_out: list | None = None
        self.per_call_s = per_call_hint_s
        self.results: dict[str, dict] = {}
        self.timing_process: dict = {}  # a third timing process: why it runs, its environment
        self.held: Any = None  # the compiled copy's held-memory window (probes/memory.Held)
        self.eager_first_call_peak: dict | None = None  # set with the eager side's first call

    # -- helpers -------------------------------------------------------------
    def fresh(self) -> Subject:
        w = self.pristine.fresh()
        w.device_type = self.device.type
        return Subject(w)

    def call(self, fn: Any, call_args: Any = None) -> Any:
        return calls.call(
            fn,
            call_args if call_args is not None else self.workload.call_args,
            self.workload,
            self.device,
        )

    def eager_fn(self) -> Any:
        return self.call(self.eager_subject.fn)

    def compiled_fn(self) -> Any:
        return self.call(self.compiled)

    def check_copies(self) -> None:
        """Once per process, before any measurement: does a copy's first call do what the
        original's does? (`Pristine.verify`; the original is called only when it is ours.)"""
        if self._check_done:
            return
        self._check_done = True
        if not self.owns_original:
            self.pristine.skip("in-process: the object is yours, and tcdoctor never calls it")
            return
        made: dict[int, tuple[Subject, Any, float]] = {}
        peaks: dict[int, dict] = {}

        def call(w: Any) -> Any:  # as the eager phase calls: RNG reset, timed, its own inputs
            w.device_type = self.device.type
            subject = Subject(w)
            reset_rng_state()
            with memory.first_call_peak(self.device) as peaks[id(w)]:
                made[id(w)] = (
                    subject,
                    *calls.timed_call(self.call, (subject.fn, w.call_args), self.sync),
                )
            return made[id(w)][1]

        dup = self.pristine.verify(self.workload, call)
        self._checked = made.get(id(dup)) if dup is not None else None
        if self._checked is not None:  # the copy's call is the process's first model call
            self.eager_first_call_peak = peaks.get(id(dup))

    def take_checked(self) -> tuple[Subject, Any, float] | None:
        """The fidelity check's copy, called once, with its output and wall time (once)."""
        checked, self._checked = self._checked, None
        return checked

    def torch_compile(self, subject: Subject) -> Any:
        """`torch.compile` of what the subject calls, with the analysis's backend, mode and kwargs."""
        return first_call.build(
            subject.fn, self.options.backend, self.options.mode, self.workload.compile_kwargs
        )

    def original(self) -> Subject:
        """The object build() returned, as the user's script calls it (a timing-only process)."""
        return Subject(self.workload)

    def need_compiled(self) -> None:
        if self.compiled is None:
            raise Skip("the compiled model is not available (compile phase did not finish)")

    def pristine_fn(self) -> Any:
        """The called object on the pristine workload, what numerics compares changed state against:
        read, never called, so the snapshot itself serves (a deep copy per phase would only repeat it)."""
        return Subject(self.pristine.peek()).fn

    def pristine_inputs(self) -> Any:
        """The call arguments as build() returned them (read, never called with)."""
        return self.pristine.peek().call_args

    def call_and_snapshot(self, subject: Subject, fn: Any = None) -> list:
        """One call of `fn` (default: the subject's own callable) on the subject's own inputs (a
        pristine copy of them: a call that changes its inputs in place is judged on them): its
        output, the subject's state and its inputs after it."""
        ca = subject.workload.call_args
        out = self.call(fn if fn is not None else subject.fn, ca)
        return outputs.snapshot(out, subject.fn, self.pristine_fn, (ca, self.pristine_inputs()))

    # -- what the experiments layer gives the probes (probes/ sit below experiments/) ---------------
    @staticmethod
    def timing_question() -> Any:
        """What the timing phase answers (experiments.pair.question): faster than eager, than required?"""
        return question()

    def automatic_row(self, subject: Subject, compiled: Any, data: dict) -> dict | None:
        """The 'automatic' shape row from the recompile sequence just run, when the main analysis
        stands in for that strategy (strategies.main_is_automatic), else None: its compiles are
        every entry since the first call's fresh Dynamo state, then each shape is timed as the
        strategy child would have. The child is never started."""
        if not strategies.main_is_automatic(self.workload, self.options):
            return None
        from ..probes import dynamo_state

        first = (self.results.get("compile") or {}).get("first_call_s") or 0.0
        row = strategies.dynamic_row(
            subject.workload,
            self.options,
            "automatic",
            subject.workload.model,
            compiled,
            dynamo_state.compilation_metrics(),
            first + data["sequence_wall_s"],
            bool(data.get("limit_hit")),
        )
        row["source"] = "main analysis"
        row["cache_start"] = "empty"
        return row

    # -- driver ----------------------------------------------------------------
    def measure(self, name: str) -> dict:
        """Run one phase's measure in this process (the driver's step; tests call phases one by one)."""
        return _measure_of(name)(self)

    def run(self, process: str, skip: dict[str, str] | None = None) -> bool:
        """Run the process's phases in order; False if the user's code failed before anything was measured.

        `skip` maps phase names this run leaves out to the reason (a distributed run skips the profiler)."""
        for name in phases.order(process):
            if skip and name in skip:
                self.sink(Event(event="skipped", phase=name, why=skip[name]))
                continue
            self.sink(Event(event="start", phase=name, t=time.time()))
            t0 = time.perf_counter()
            try:
                data = self.measure(name)
            except Skip as why:
                self.sink(Event(event="skipped", phase=name, why=str(why)))
                continue
            except Exception as exc:  # noqa: BLE001 - user code may raise anything; report it
                err = (
                    {"message": exc.message, "where": exc.where}
                    if isinstance(exc, PhaseError)
                    else describe_exception(exc)
                )
                fatal = phases.BY_NAME[name].fatal
                self.sink(
                    Event(
                        event="failed",
                        phase=name,
                        error=err,
                        fatal=fatal,
                        exit_code=EXIT_USER_CODE if fatal else None,
                    )
                )
                if fatal:
                    return False
                continue
            self.results[name] = data
            self.sink(
                Event(
                    event="done",
                    phase=name,
                    seconds=time.perf_counter() - t0,
                    t=time.time(),
                    data=data,
                )
            )
        return True


def load_target(path: str, sink) -> tuple | int:
    """The load phase: (workload, rebuild), or the exit code after a fatal 'failed' event."""
    from ..errors import TcdoctorError
    from ..target import load as target

    sink(Event(event="start", phase="load"))
    try:
        workload, rebuild = target.load_with_rebuild(path)
    except TcdoctorError as exc:
        error = {"message": exc.message, "where": None}
        sink(Event(event="failed", phase="load", error=error, fatal=True, exit_code=exc.exit_code))
        return exc.exit_code
    sink(Event(event="done", phase="load", data={"name": workload.name}))
    return workload, rebuild
