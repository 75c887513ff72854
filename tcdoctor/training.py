"""Training steps on fresh copies, in the four ways they can be compiled.

eager      the step as written
model      torch.compile(model), the rest eager
step       torch.compile of the whole step (zero_grad, forward, loss, backward, optimizer.step)
optimizer  only optimizer.step compiled (PyTorch's "Compiling the optimizer" recipe)

Each runner owns one fresh copy of the TrainStep (model and optimizer copied together, so the
optimizer steps the copy's parameters): no way trains the model another way measures. With
``autocast`` the forward and the loss run under ``torch.autocast`` and backward outside it, as
PyTorch's AMP recipe does.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

from .workload import TrainStep

WAYS = ("eager", "model", "step", "optimizer")


def _default_step(
    model: Any, opt: Any, inputs: tuple, kwargs: dict, spec: TrainStep, opt_step: Callable
) -> Any:
    opt.zero_grad(set_to_none=True)
    with spec.forward_context():
        loss = spec.loss_fn(model(*inputs, **kwargs), spec.targets)
    loss.backward()
    opt_step()
    return loss.detach()


class StepRunner:
    """Callable(*inputs, **kwargs) running one step of `spec` (a copy it owns), compiled `way`."""

    def __init__(
        self,
        spec: TrainStep,
        way: str = "eager",
        backend: str = "inductor",
        mode: str | None = None,
    ):
        if way not in WAYS:
            raise ValueError(f"unknown way {way!r}")
        if way == "optimizer" and (spec.optimizer is None or spec.train_step is not None):
            raise ValueError(
                "compiling only optimizer.step needs TrainStep(optimizer=...) without a custom train_step"
            )
        from .probes.first_call import build

        self.spec, self.way = spec, way
        self.model, self.optimizer = spec.model, spec.optimizer
        self.forward = (
            build(self.model, backend, mode, spec.compile_kwargs) if way == "model" else self.model
        )
        self.opt_step = self.optimizer.step if self.optimizer is not None else (lambda: None)
        if way == "optimizer":
            self.opt_step = build(self._plain_opt_step, backend, mode, spec.compile_kwargs)

    def _plain_opt_step(self) -> None:
        self.optimizer.step()

    def step(self, *inputs: Any, **kwargs: Any) -> Any:
        s = self.spec
        if s.train_step is not None:
            with s.forward_context() if s.autocast is not None else contextlib.nullcontext():
                return s.train_step(self.forward, self.optimizer, inputs, s.targets)
        return _default_step(self.forward, self.optimizer, inputs, kwargs, s, self.opt_step)

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.step(*inputs, **kwargs)


def subjects(
    fresh: Callable[[], TrainStep], way: str, backend: str, mode: str | None
) -> tuple[Callable, Callable]:
    """(eager step, step compiled `way`), each on its own fresh copy; 'step' compiles the whole function."""
    from .probes.first_call import build

    eager = StepRunner(fresh(), "eager")
    if way == "step":
        runner = StepRunner(fresh(), "eager")
        return eager, build(runner.step, backend, mode, runner.spec.compile_kwargs)
    return eager, StepRunner(fresh(), way, backend, mode)
