"""Training steps on fresh copies, in the four ways they can be compiled.

eager      the step as written
model      torch.compile(model), the rest eager
step       torch.compile of the whole step (zero_grad, forward, loss, backward, optimizer.step)
optimizer  only optimizer.step compiled (PyTorch's "Compiling the optimizer" recipe)

Each runner owns one fresh copy of the TrainStep (model and optimizer copied together, so the
optimizer steps the copy's parameters): no way trains the model another way measures. With
``autocast`` the forward and the loss run under ``torch.autocast`` and backward outside it, as
PyTorch's AMP recipe does.

Compiled whole, the step must compile exactly as the step a user writes by hand, or tcdoctor's
own code is counted and timed as the user's. Two pitfalls, both measured on samples/train_adam.py:
- A context manager Dynamo does not support (``contextlib.nullcontext``, an ``ExitStack``, a
  ``@contextmanager`` generator) breaks the graph inside the compiled region. The step bodies
  here are plain code; the only context manager is ``torch.autocast``, which Dynamo traces.
- A frame nested in the compiled one adds a break of its own: when the first break happens in a
  function called from the compiled frame, Dynamo logs it once in the outer frame (at the call)
  and once more when the callee runs as a frame of its own. Wrapping the step in a method called
  ``zero_grad``'s break twice (5 breaks where PyTorch logs 4 for the same step by hand). So
  ``StepRunner.step`` is a frame Dynamo skips (``skip_code``: the frame runs as Python, the
  frames it calls are compiled as usual), and the first frame Dynamo compiles is the step body
  itself (``plain_step``, ``autocast_step``) or the user's own ``train_step``, as when the user
  compiles it by hand. Argument passing differs from a hand-written closure, so guard counts may
  differ by a few; graphs and breaks are the same (tests/test_training_counts.py).
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from ..target.workload import TrainStep


class Subject:
    """One fresh copy of the workload and the callable that runs it (a model or a training step)."""

    def __init__(self, workload: Any):
        self.workload = workload
        if workload.kind == "train":
            self.fn: Any = StepRunner(workload, "eager").step
        else:
            self.fn = workload.model


WAYS = ("eager", "model", "step", "optimizer")


def plain_step(
    model: Any,
    opt: Any,
    opt_step: Callable[[], Any],
    loss_fn: Callable,
    inputs: tuple,
    kwargs: dict,
    targets: Any,
) -> Any:
    """One step as written by hand; the first frame Dynamo compiles when the step is compiled whole."""
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(*inputs, **kwargs), targets)
    loss.backward()
    opt_step()
    return loss.detach()


def autocast_step(
    model: Any,
    opt: Any,
    opt_step: Callable[[], Any],
    loss_fn: Callable,
    inputs: tuple,
    kwargs: dict,
    targets: Any,
    device_type: str,
    dtype: Any,
) -> Any:
    """`plain_step` with the forward and loss under torch.autocast (AMP recipe: backward outside)."""
    opt.zero_grad(set_to_none=True)
    with torch.autocast(device_type, dtype=dtype):
        loss = loss_fn(model(*inputs, **kwargs), targets)
    loss.backward()
    opt_step()
    return loss.detach()


def opt_step_of(opt: Any) -> Callable[[], None]:
    """`opt.step()` in a function of its own, as the "Compiling the optimizer" recipe writes it (a
    closure: the same guards as the recipe's global `opt`; a method would add one on `self`)."""

    def opt_step() -> None:
        opt.step()

    return opt_step


def _skip_frame(fn: Callable) -> bool:
    """Have Dynamo run `fn`'s own frame as Python and compile the frames it calls (private API)."""
    try:
        from torch._dynamo.eval_frame import skip_code
    except ImportError:  # pragma: no cover - a release without it nests the step one frame deeper
        return False
    skip_code(fn.__code__)
    return True


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
        from ..probes.first_call import build

        self.spec, self.way = spec, way
        self.model, self.optimizer = spec.model, spec.optimizer
        self.forward = (
            build(self.model, backend, mode, spec.compile_kwargs) if way == "model" else self.model
        )
        self.opt_step = self.optimizer.step if self.optimizer is not None else (lambda: None)
        if way == "optimizer":
            self.opt_step = build(opt_step_of(self.optimizer), backend, mode, spec.compile_kwargs)

    def step(self, *inputs: Any, **kwargs: Any) -> Any:
        """Not compiled itself (see the module docstring): it calls the frame that is."""
        s = self.spec
        if s.train_step is not None:
            if s.autocast is None:
                return s.train_step(self.forward, self.optimizer, inputs, s.targets)
            with torch.autocast(s.device_type, dtype=s.autocast):
                return s.train_step(self.forward, self.optimizer, inputs, s.targets)
        args = (self.forward, self.optimizer, self.opt_step, s.loss_fn, inputs, kwargs, s.targets)
        if s.autocast is None:
            return plain_step(*args)
        return autocast_step(*args, s.device_type, s.autocast)

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.step(*inputs, **kwargs)


_skip_frame(StepRunner.step)


def subjects(
    fresh: Callable[[], TrainStep], way: str, backend: str, mode: str | None
) -> tuple[Callable, Callable]:
    """(eager step, step compiled `way`), each on its own fresh copy; 'step' compiles the whole function."""
    from ..probes.first_call import build

    eager = StepRunner(fresh(), "eager")
    if way == "step":
        runner = StepRunner(fresh(), "eager")
        return eager, build(runner.step, backend, mode, runner.spec.compile_kwargs)
    return eager, StepRunner(fresh(), way, backend, mode)
