"""The phases of one analysis, in order, each streamed as it finishes.

The cold child runs: environment → eager → graph_breaks → compile → runtime → numerics →
recompiles (last: a hang in the user's variants loses nothing measured). The warm child (fresh process, same inductor cache) runs: compile_warm → memory →
profile. The in-process API runs all but compile_warm. Later phases that need an earlier
one's result are skipped with the reason, never faked.

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

import os
import platform
import time
from typing import Any, Callable

import torch

from ..errors import EXIT_USER_CODE
from ..experiments import compile_remedies, strategies
from ..experiments.pair import question
from ..experiments.training import Subject
from ..options import Options
from ..probes import (
    calls,
    compile_graphs,
    drift,
    dynamo_state,
    first_call,
    graph_breaks,
    guard_ab,
    guards,
    memory,
    memory_graphs,
    numerics,
    profile,
    recompiles,
    timing,
)
from ..report import counts, phases
from ..target.pristine import Pristine, reset_rng_state
from ..target.userframes import describe_exception, python_version
from ..target.workload import Workload

Sink = Callable[[dict], None]
MEASURES: dict[str, Callable[["PhaseRunner"], dict]] = {}


def measures(name: str) -> Callable:
    """Register a PhaseRunner method as the measurement of registry phase `name`."""
    if name not in phases.BY_NAME:
        raise KeyError(f"phase {name!r} is not in tcdoctor.phases.PHASES")

    def register(method: Callable) -> Callable:
        MEASURES[name] = method
        return method

    return register


def threads_source(threads: int | None, in_child: bool) -> str:
    """Where the analysis's intra-op thread count came from (the report states it with the figure)."""
    if threads is not None:
        return "--threads"
    if os.environ.get("OMP_NUM_THREADS"):
        return "OMP_NUM_THREADS"
    return "torch's default in a fresh process" if in_child else "this process's own setting"


class Skip(Exception):
    """A phase that cannot run; its message is the 'not measured (why)'."""


class PhaseRunner:
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
        self._own_original = rebuild is not None  # a child that ran build(): the original is ours
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

    def _check_copies(self) -> None:
        """Once per process, before any measurement: does a copy's first call do what the
        original's does? (`Pristine.verify`; the original is called only when it is ours.)"""
        if self._check_done:
            return
        self._check_done = True
        if not self._own_original:
            self.pristine.skip("in-process: the object is yours, and tcdoctor never calls it")
            return
        made: dict[int, tuple[Subject, Any, float]] = {}

        def call(w: Any) -> Any:  # as the eager phase calls: RNG reset, timed, its own inputs
            w.device_type = self.device.type
            subject = Subject(w)
            reset_rng_state()
            made[id(w)] = (
                subject,
                *calls.timed_call(self.call, (subject.fn, w.call_args), self.sync),
            )
            return made[id(w)][1]

        dup = self.pristine.verify(self.workload, call)
        self._checked = made.get(id(dup)) if dup is not None else None

    def _take_checked(self) -> tuple[Subject, Any, float] | None:
        """The fidelity check's copy, called once, with its output and wall time (once)."""
        checked, self._checked = self._checked, None
        return checked

    def _compile(self, subject: Subject) -> Any:
        return first_call.build(
            subject.fn, self.options.backend, self.options.mode, self.workload.compile_kwargs
        )

    # -- phases ----------------------------------------------------------------
    @measures("environment")
    def environment(self) -> dict:
        self._check_copies()
        dname = (
            torch.cuda.get_device_name(self.device)
            if self.device.type == "cuda"
            else (platform.processor() or platform.machine())
        )
        return {
            "torch": torch.__version__,
            "python": python_version(),
            "platform": platform.platform(terse=True),
            "device": str(self.device),
            "device_name": dname,
            "cuda": torch.version.cuda if self.device.type == "cuda" else None,
            "threads": torch.get_num_threads(),
            "threads_source": threads_source(self.options.threads, self._own_original),
            "cpu_count": os.cpu_count(),
            "backend": self.options.backend,
            "mode": self.options.mode or "default",
            "compile_kwargs": {k: repr(v) for k, v in self.workload.compile_kwargs.items()},
            "grad": self.workload.grad,
            "autocast": str(self.workload.autocast).replace("torch.", "")
            if self.workload.autocast is not None
            else None,
            "state": self.pristine.method,
            "state_check": self.pristine.check,
            "workload": {
                "kind": self.workload.kind,
                "name": self.workload.name,
                "model": type(self.workload.model).__name__,
                "subject": self.label,
                "inputs": recompiles.describe_call(self.workload.call_args),
                "variants": [
                    recompiles.describe_variant(i, v, self.workload)
                    for i, v in enumerate(self.workload.variants, 1)
                ],
                "parameters": sum(p.numel() for p in self.workload.model.parameters())
                if isinstance(self.workload.model, torch.nn.Module)
                else None,
            },
        }

    @measures("eager")
    def eager(self) -> dict:
        self._check_copies()
        checked = self._take_checked()
        if checked is not None:  # the fidelity check made this very call: fresh copy, RNG reset
            self.eager_subject, out, wall = checked
        else:
            self.eager_subject = self.fresh()
            reset_rng_state()
            try:
                out, wall = calls.timed_call(self.eager_fn, (), self.sync)
            except Exception as exc:
                explained = self._no_grad_explains(exc)
                if explained is None:
                    raise
                raise explained from exc
        self.eager_out = numerics.snapshot(out, self.eager_subject.fn, self._pristine_fn)
        self.per_call_s = self.per_call_s or wall
        return {
            "first_call_s": wall,
            "outputs": len(self.eager_out),
            "tensor_outputs": numerics.tensor_leaves(self.eager_out),
        }

    def _no_grad_explains(self, exc: Exception) -> Exception | None:
        """If the call works with gradients on, the failure is tcdoctor's no_grad default: say so."""
        if self.workload.grad:
            return None
        subject = self.fresh()
        try:
            with torch.enable_grad(), subject.workload.forward_context():
                self.workload.call_args.apply(subject.fn)
        except Exception:  # noqa: BLE001 - it fails either way: the original error stands
            return None
        d = describe_exception(exc)
        return NoGradError(
            f"{d['message']} — tcdoctor ran this call under torch.no_grad() (the default for (model, inputs)), and it "
            "succeeds with gradients enabled: return tcdoctor.Workload(model, inputs, grad=True), or a "
            "tcdoctor.TrainStep for a training step",
            d["where"],
        )

    @measures("graph_breaks")
    def graph_breaks(self) -> dict:
        subject = self.fresh()
        reset_rng_state()
        with self.workload.context(self.device.type):
            return graph_breaks.probe(subject.fn, self.workload.call_args)

    @measures("compile")
    def compile(self) -> dict:
        if self.before_compile:
            self.before_compile()
        dynamo_state.fresh()
        subject = self.fresh()
        self.compiled = self._compile(subject)
        reset_rng_state()
        n_before = len(dynamo_state.compilation_metrics())
        with dynamo_state.dynamo_logs() as logs:
            out, data = self._first_call()
        data["break_sites"] = graph_breaks.break_sites(
            logs
        )  # which compiled region each break ends
        # the counts the report shows: this compile's (the user's backend, mode, DDPOptimizer), not explain's
        data["counted"] = graph_breaks.counted(logs)
        if "graph_breaks" in self.results:  # the fixes planned here address these findings' ids
            self.results["graph_breaks"] = counts.use_compile_counts(
                self.results["graph_breaks"], data["counted"]
            )
        self.first_call_metrics = dynamo_state.compilation_metrics()[n_before:]
        data["graphs"] = compile_graphs.probe(  # where the compile time goes, frame by frame
            self.first_call_metrics,
            data["first_call_s"],
            (self.results.get("eager") or {}).get("first_call_s"),
            data["break_sites"],
        )
        # CUDA-graph replays may reuse output buffers; the state is the subject's after its first call
        self.compiled_out = numerics.snapshot(out, subject.fn, self._pristine_fn)
        data["guards"] = guards.count(data["frames"])
        self.sequence = (subject, self.compiled)
        self.compiled = self._compile(self.fresh())  # timed copy; reuses the cache entry just made
        self.entries_after_first_call = len(dynamo_state.compilation_metrics())
        return data

    @measures("cache_artifacts")
    def cache_artifacts(self) -> dict:
        """The cold compile's artifacts, saved for the portable-cache remedy (nothing compiled again)."""
        self._need_compiled()
        first = (self.results.get("compile") or {}).get("first_call_s")
        why = compile_remedies.wanted(self.options, first)
        cache_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        if why or not cache_dir:
            raise Skip(f"not needed: {why or 'no inductor cache dir of its own'}")
        return compile_remedies.save_artifacts(os.path.dirname(os.path.abspath(cache_dir)))

    def _first_call(self) -> tuple[Any, dict]:
        return first_call.first_call(self.compiled_fn, self.label, self.sync)

    @measures("compile_warm")
    def compile_warm(self) -> dict:
        self._check_copies()  # this process's copies are checked too, before the compile
        checked = self._take_checked()
        dynamo_state.fresh()
        self.compiled = self._compile(self.fresh())
        self.eager_subject = checked[0] if checked is not None else self.fresh()
        reset_rng_state()
        n_before = len(dynamo_state.compilation_metrics())
        _, data = self._first_call()
        return {
            "warm_s": data["first_call_s"],
            # joined with the cold rows by compile id in the parent (report/compile_joins.py)
            "graphs": compile_graphs.table(dynamo_state.compilation_metrics()[n_before:]),
            "phases": data["phases"],
            "cache": data["cache"],
            "native_compile_s": data["native_compile_s"],
            "state": self.pristine.method,
            "state_check": self.pristine.check,
        }

    @measures("recompiles")
    def recompiles(self) -> dict:
        """The variants, fed in order to the copy whose first call the compile phase made."""
        if self.sequence is None:
            raise Skip("the compiled model is not available (compile phase did not finish)")
        state = "continues from the compile phase's first call on a pristine copy, as a fresh process would"
        if (
            self.dynamo_reset
            or len(dynamo_state.compilation_metrics()) != self.entries_after_first_call
        ):
            dynamo_state.fresh()
            subject = self.fresh()
            compiled = self._compile(subject)
            reset_rng_state()
            n_before = len(dynamo_state.compilation_metrics())
            self.call(compiled)
            self.first_call_metrics = dynamo_state.compilation_metrics()[n_before:]
            self.sequence = (subject, compiled)
            state = (
                "a pristine copy's first call made again in a fresh Dynamo state (a later phase had reset Dynamo "
                "or compiled entries of its own: guards on object identity), then the variants, as a fresh process would"
            )
        subject, compiled = self.sequence
        data = recompiles.run(  # the first call's own recompiles too (phase "first call")
            compiled,
            subject.workload.model,
            self.label,
            subject.workload,
            self.call,
            self.first_call_metrics,
        )
        data["state"] = state
        if strategies.main_is_automatic(self.workload, self.options):
            data["automatic_row"] = self._automatic_row(subject, compiled, data)
        return data

    def _automatic_row(self, subject: Subject, compiled: Any, data: dict) -> dict:
        """The 'automatic' shape row from the sequence just run (strategies.main_is_automatic):
        its compiles are every entry since the first call's fresh Dynamo state, then each shape is
        timed as the strategy child would have. The child is never started."""
        ms = dynamo_state.compilation_metrics()
        first = (self.results.get("compile") or {}).get("first_call_s") or 0.0
        row = strategies.dynamic_row(
            subject.workload,
            self.options,
            "automatic",
            subject.workload.model,
            compiled,
            ms,
            first + data["sequence_wall_s"],
            bool(data.get("limit_hit")),
        )
        row["source"] = "main analysis"
        row["cache_start"] = "empty"
        return row

    @measures("runtime")
    def runtime(self) -> dict:
        return self._timing()

    @measures("runtime_warm")
    def runtime_warm(self) -> dict:
        """The same timing in the warm process, right after its first call: a second process's
        figure for the headline speedup (report/runtime_processes.py)."""
        return self._timing()

    @measures("runtime_extra")
    def runtime_extra(self) -> dict:
        """A timing-only process's timing (run/launcher.py starts them until --processes have timed,
        and one with glibc's thresholds pinned when every process page-faulted), as a plain script
        runs: the object build() returned, compiled, its first call against the main cache, then
        the same timing on that object (eager and compiled share it, as in the user's script).
        `timing_process` says which, why and in which environment."""
        subject = Subject(self.workload)
        self.compiled, self.eager_subject = self._compile(subject), subject
        reset_rng_state()
        self.call(self.compiled)
        self.sync()
        return dict(self._timing(), **self.timing_process)

    def _timing(self) -> dict:
        self._need_compiled()
        w, ca = self.workload, self.workload.call_args
        data = timing.measure(
            calls.one_call(self.eager_subject.fn, ca, w, self.device),
            calls.one_call(self.compiled, ca, w, self.device),
            self.sync,
            self.options.budget_s,
            calls.batch_context(w),
            question(),
        )
        self.per_call_s = data["compiled"]["median_s"]
        return data

    @measures("numerics")
    def numerics(self) -> dict:
        self._need_compiled()
        if self.eager_out is None or self.compiled_out is None:
            raise Skip("no eager or compiled output to compare")
        compiled_out, rng = self.compiled_out, self._rng_check()
        why = numerics.random_not_compared(rng)
        if why:
            return {"rng": rng, "not_measured": why, "state": self.pristine.method}
        if rng["fallback_random"]:
            compiled_out = self._fallback_random_out(rng)
        if self.workload.kind == "train":
            ref, why = (
                None,
                "training step: the loss of the first step is compared, eager vs compiled, each from the same initial weights",
            )
        else:
            ref, why = numerics.fp64_reference(self.fresh().fn, self._fp64_run)
        data = numerics.compare(
            self.eager_out, compiled_out, ref, why, self.workload.autocast, self._pristine_fn
        )
        data["rng"] = rng
        data["state"] = self.pristine.method
        return data

    def _fp64_run(self, model64: Any, cast: Callable[[Any], Any]) -> Any:
        reset_rng_state()
        ca = self.workload.call_args
        with (
            torch.no_grad() if not self.workload.grad else torch.enable_grad()
        ):  # fp64: no autocast
            return model64(*cast(ca.args), **cast(ca.kwargs))

    def _pristine_fn(self) -> Any:
        """The called object on the pristine workload, what numerics compares changed state against:
        read, never called, so the snapshot itself serves (a deep copy per phase would only repeat it)."""
        return Subject(self.pristine.peek()).fn

    def _call_and_snapshot(self, subject: Subject, fn: Any = None) -> list:
        """One call of `fn` (default: the subject's own callable): its output and the subject's state after it."""
        out = self.call(fn if fn is not None else subject.fn)
        return numerics.snapshot(out, subject.fn, self._pristine_fn)

    def _rng_check(self) -> dict:
        return numerics.rng_check(
            self.options.backend,
            lambda: self._call_and_snapshot(self.fresh()),
            self.options.fallback_random,
        )

    def _fallback_random_out(self, rng: dict) -> list:
        def compiled_on_fresh_copy() -> list:
            subject = self.fresh()
            return self._call_and_snapshot(subject, self._compile(subject))

        out = numerics.fallback_random_output(compiled_on_fresh_copy, rng)
        self.dynamo_reset = True  # Dynamo's cache was cleared: the recompile sequence starts again
        return out

    @measures("drift")
    def drift_phase(self) -> dict:
        return drift.phase_drift(self)  # where the numbers drift (issue 36; probes/drift.py)

    @measures("memory")
    def memory(self) -> dict:
        self._need_compiled()
        return memory.measure(self.eager_fn, self.compiled_fn, self.device)

    @measures("memory_graphs")
    def memory_graphs_phase(self) -> dict:
        return memory_graphs.phase_memory_graphs(self)  # where the growth is (issue 36)

    def need_compiled(self) -> None:  # the name probe_interface.md gives it
        self._need_compiled()

    @measures("profile")
    def profile(self) -> dict:
        self._need_compiled()
        w, ca = self.workload, self.workload.call_args
        compiled = calls.one_call(self.compiled, ca, w, self.device)
        data = profile.measure(
            calls.one_call(self.eager_subject.fn, ca, w, self.device),
            compiled,
            self.device,
            self.options.trace_dir,
            self.options.profile_budget_s,
            calls.batch_context(w),
        )
        # guard cost by removing the guards, after the profiler and outside every other timed figure
        data["guard_ab"] = guard_ab.measure(
            compiled,
            self.sync,
            self.per_call_s,
            self.options.profile_budget_s,
            calls.batch_context(w),
        )
        return data

    def _need_compiled(self) -> None:
        if self.compiled is None:
            raise Skip("the compiled model is not available (compile phase did not finish)")

    # -- driver ----------------------------------------------------------------
    def run(self, process: str, skip: dict[str, str] | None = None) -> bool:
        """Run the process's phases in order; False if the user's code failed before anything was measured.

        `skip` maps phase names this run leaves out to the reason (a distributed run skips the profiler)."""
        for name in phases.order(process):
            if skip and name in skip:
                self.sink({"event": "skipped", "phase": name, "why": skip[name]})
                continue
            self.sink({"event": "start", "phase": name, "t": time.time()})
            t0 = time.perf_counter()
            try:
                data = MEASURES[name](self)
            except Skip as why:
                self.sink({"event": "skipped", "phase": name, "why": str(why)})
                continue
            except Exception as exc:  # noqa: BLE001 - user code may raise anything; report it
                err = (
                    {"message": exc.message, "where": exc.where}
                    if isinstance(exc, NoGradError)
                    else describe_exception(exc)
                )
                fatal = name == "eager"
                self.sink(
                    {
                        "event": "failed",
                        "phase": name,
                        "error": err,
                        "fatal": fatal,
                        "exit_code": EXIT_USER_CODE if fatal else None,
                    }
                )
                if fatal:
                    return False
                if name in ("compile", "compile_warm"):
                    self.compiled = None
                continue
            self.results[name] = data
            self.sink(
                {
                    "event": "done",
                    "phase": name,
                    "seconds": time.perf_counter() - t0,
                    "t": time.time(),
                    "data": data,
                }
            )
        return True


class NoGradError(Exception):
    """The eager call failed only because tcdoctor ran it under torch.no_grad()."""

    def __init__(self, message: str, where: dict | None):
        super().__init__(message)
        self.message, self.where = message, where


def load_target(path: str, sink) -> tuple | int:
    """The load phase: (workload, rebuild), or the exit code after a fatal 'failed' event."""
    from ..errors import TcdoctorError
    from ..target import load as target

    sink({"event": "start", "phase": "load"})
    try:
        workload, rebuild = target.load_with_rebuild(path)
    except TcdoctorError as exc:
        error = {"message": exc.message, "where": None}
        sink(
            {
                "event": "failed",
                "phase": "load",
                "error": error,
                "fatal": True,
                "exit_code": exc.exit_code,
            }
        )
        return exc.exit_code
    sink({"event": "done", "phase": "load", "data": {"name": workload.name}})
    return workload, rebuild
