"""The phases of one analysis, in order, each streamed as it finishes.

The cold child runs: environment → eager → graph_breaks → compile → runtime → numerics →
recompiles. The warm child (fresh process, same inductor cache) runs: compile_warm → memory
→ profile. The in-process API runs all but compile_warm. Later phases that need an earlier
one's result are skipped with the reason, never faked.
"""
from __future__ import annotations

import os
import platform
import time
from typing import Any, Callable

import torch

from ..errors import EXIT_USER_CODE
from ..probes import compile as compile_probe
from ..probes import device as dev
from ..probes import dynamo_state, graph_breaks, memory, numerics, profile, recompiles, timing
from ..userframes import describe_exception, python_version
from ..workload import Workload
from .options import Options

Sink = Callable[[dict], None]
COLD = ("environment", "eager", "graph_breaks", "compile", "runtime", "numerics", "recompiles")
WARM = ("compile_warm", "memory", "profile")
IN_PROCESS = ("environment", "eager", "graph_breaks", "compile", "runtime", "numerics", "memory", "profile", "recompiles")


class Skip(Exception):
    """A phase that cannot run; its message is the 'not measured (why)'."""


class Session:
    def __init__(self, workload: Workload, options: Options, sink: Sink, per_call_hint_s: float | None = None,
                 before_compile: Callable[[], Any] | None = None):
        self.before_compile = before_compile
        self.w = workload
        self.o = options
        self.sink = sink
        if workload.kind == "train":
            from ..training import StepRunner

            # the main analysis of a training workload compiles the whole step; each side on its own copy
            self.eager_subject: Any = StepRunner(workload, "eager")
            self.fresh_subject = lambda: StepRunner(workload, "eager").step
            self.label = "train step"
        else:
            self.eager_subject = workload.model
            self.fresh_subject = lambda: workload.model
            m = workload.model
            self.label = f"{type(m).__name__}.forward" if isinstance(m, torch.nn.Module) else getattr(m, "__name__", type(m).__name__)
        self.device = dev.detect(workload.model, workload.inputs)
        self.sync = dev.synchronizer(self.device)
        self.compiled: Any = None
        self.eager_out: Any = None
        self.compiled_out: Any = None
        self.per_call_s = per_call_hint_s
        self.results: dict[str, dict] = {}

    # -- helpers -------------------------------------------------------------
    def call(self, fn: Any, inputs: tuple) -> Any:
        return dev.call(fn, inputs, self.w.grad)

    def eager_fn(self) -> Any:
        return self.call(self.eager_subject, self.w.inputs)

    def compiled_fn(self) -> Any:
        return self.call(self.compiled, self.w.inputs)

    def ensure_compiled(self) -> None:
        if self.compiled is None:
            self.compiled = compile_probe.build(self.fresh_subject(), self.o.backend, self.o.mode, self.w.compile_kwargs)

    # -- phases ----------------------------------------------------------------
    def environment(self) -> dict:
        dname = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else (platform.processor() or platform.machine())
        return {
            "torch": torch.__version__,
            "python": python_version(),
            "platform": platform.platform(terse=True),
            "device": str(self.device),
            "device_name": dname,
            "cuda": torch.version.cuda if self.device.type == "cuda" else None,
            "threads": torch.get_num_threads(),
            "cpu_count": os.cpu_count(),
            "backend": self.o.backend,
            "mode": self.o.mode or "default",
            "compile_kwargs": {k: repr(v) for k, v in self.w.compile_kwargs.items()},
            "grad": self.w.grad,
            "workload": {
                "kind": self.w.kind,
                "name": self.w.name,
                "model": type(self.w.model).__name__,
                "subject": self.label,
                "inputs": recompiles.describe_inputs(self.w.inputs),
                "variants": [recompiles.describe_variant(i, v) for i, v in enumerate(self.w.variants, 1)],
                "parameters": sum(p.numel() for p in self.w.model.parameters()) if isinstance(self.w.model, torch.nn.Module) else None,
            },
        }

    def eager(self) -> dict:
        torch.manual_seed(0)
        self.eager_out, wall = dev.timed_call(self.eager_fn, (), self.sync)
        self.per_call_s = self.per_call_s or wall
        return {"first_call_s": wall, "outputs": len(numerics.flatten(self.eager_out))}

    def graph_breaks(self) -> dict:
        with dev.grad_context(self.w.grad):
            return graph_breaks.probe(self.fresh_subject(), self.w.inputs)

    def compile(self) -> dict:
        if self.before_compile:
            self.before_compile()
        dynamo_state.fresh()
        self.ensure_compiled()
        torch.manual_seed(0)
        out, data = self._first_call()
        self.compiled_out = numerics.detached_copy(out)  # CUDA-graph replays may reuse output buffers
        data["guards"] = compile_probe.guards(data["frames"])
        return data

    def _first_call(self) -> tuple[Any, dict]:
        return compile_probe.first_call(self.compiled_fn, self.label, self.sync)

    def compile_warm(self) -> dict:
        dynamo_state.fresh()
        self.ensure_compiled()
        _, data = self._first_call()
        return {"warm_s": data["first_call_s"], "phases": data["phases"], "cache": data["cache"], "native_compile_s": data["native_compile_s"]}

    def runtime(self) -> dict:
        self._need_compiled()
        data = timing.measure(self.eager_fn, self.compiled_fn, self.sync, self.o.budget_s)
        self.per_call_s = data["compiled"]["median_s"]
        return data

    def numerics(self) -> dict:
        self._need_compiled()
        if self.eager_out is None or self.compiled_out is None:
            raise Skip("no eager or compiled output to compare")
        torch.manual_seed(0)
        if self.w.kind == "train":
            ref, why = None, "training step: the loss of the first step is compared, eager vs compiled, each from the same initial weights"
        else:
            ref, why = numerics.fp64_reference(self.w.model, self.w.inputs, self.call)
        return numerics.compare(self.eager_out, self.compiled_out, ref, why)

    def memory(self) -> dict:
        self._need_compiled()
        return memory.measure(self.eager_fn, self.compiled_fn, self.device)

    def profile(self) -> dict:
        self._need_compiled()
        return profile.measure(self.eager_fn, self.compiled_fn, self.device, self.per_call_s or 1e-3, self.o.trace_dir)

    def recompiles(self) -> dict:
        self._need_compiled()
        return recompiles.run(self.compiled, self.w.model, self.label, self.w, self.call)

    def _need_compiled(self) -> None:
        if self.compiled is None:
            raise Skip("the compiled model is not available (compile phase did not finish)")

    # -- driver ----------------------------------------------------------------
    def run(self, phases: tuple[str, ...]) -> bool:
        """Run phases in order; returns False if the user's code failed before anything was measured."""
        for name in phases:
            self.sink({"event": "start", "phase": name, "t": time.time()})
            t0 = time.perf_counter()
            try:
                data = getattr(self, name)()
            except Skip as why:
                self.sink({"event": "skipped", "phase": name, "why": str(why)})
                continue
            except Exception as exc:  # noqa: BLE001 - user code may raise anything; report it
                err = describe_exception(exc)
                fatal = name == "eager"
                self.sink({"event": "failed", "phase": name, "error": err, "fatal": fatal,
                           "exit_code": EXIT_USER_CODE if fatal else None})
                if fatal:
                    return False
                if name in ("compile", "compile_warm"):
                    self.compiled = None
                continue
            self.results[name] = data
            self.sink({"event": "done", "phase": name, "seconds": time.perf_counter() - t0, "t": time.time(), "data": data})
        return True
