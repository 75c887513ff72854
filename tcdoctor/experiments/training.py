"""Training steps on fresh copies, in the four ways they can be compiled.

eager      the step as written
model      torch.compile(model), the rest eager
step       torch.compile of the whole step (zero_grad, forward, loss, backward, optimizer.step)
optimizer  only optimizer.step compiled (PyTorch's "Compiling the optimizer" recipe)

Each runner owns one fresh copy of the TrainStep (model and optimizer copied together, so the
optimizer steps the copy's parameters): no way trains the model another way measures. With
``autocast`` the forward and the loss run under ``torch.autocast`` and backward outside it, as
PyTorch's AMP recipe does.

Compiled whole, the step is the function PyTorch's recipes write: ``step(*inputs, **kwargs)``
closing over the model, the optimizer, the loss function and the targets (``closure_step``,
``autocast_closure_step``), or the user's own ``train_step`` as given; the report states which
(``TrainStep.step_form``). Written so, the counts are the ones a user's closure gets: on
samples/train_adam.py 3 graphs and 4 breaks, on the DDP MLP (2 gloo ranks) 4 and 7 per rank, with
SGD and with Adam, equal to PyTorch's counters for the same closure compiled by hand
(tests/test_training_counts.py, tests/test_ddp_mlp_counts.py). Passing the model and optimizer as
arguments counts the same; a no-argument step over module globals counts fewer because Dynamo
compiles less of it (TrainStep.step_form says why).

It must compile exactly as the step a user writes by hand, or tcdoctor's own code is counted and
timed as the user's. Two pitfalls, both measured on samples/train_adam.py:
- A context manager Dynamo does not support (``contextlib.nullcontext``, an ``ExitStack``, a
  ``@contextmanager`` generator) breaks the graph inside the compiled region. The step bodies
  here are plain code; the only context manager is ``torch.autocast``, which Dynamo traces.
- A frame nested in the compiled one adds a break of its own: when the first break happens in a
  function called from the compiled frame, Dynamo logs it once in the outer frame (at the call)
  and once more when the callee runs as a frame of its own. Wrapping the step in a method called
  ``zero_grad``'s break twice (5 breaks where PyTorch logs 4 for the same step by hand). So
  ``StepRunner.step`` is a frame Dynamo skips (``skip_code``: the frame runs as Python, the
  frames it calls are compiled as usual), and the first frame Dynamo compiles is the closure
  itself or the user's own ``train_step``, as when the user compiles it by hand. The closure takes
  the inputs as ``*inputs, **kwargs`` (by hand: ``step(x)``), so Dynamo guards the tuple's and the
  dict's structure too: a guard count may differ by a few; graphs and breaks are the same.
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


def closure_step(
    model: Any, opt: Any, opt_step: Callable[[], Any], loss_fn: Callable, targets: Any
) -> Callable[..., Any]:
    """The step as PyTorch's recipes write it: a function of the inputs closing over the model, the
    optimizer, the loss function and the targets (TrainStep.step_form). Its frame is the first one
    Dynamo compiles when the step is compiled whole."""

    def step(*inputs: Any, **kwargs: Any) -> Any:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(*inputs, **kwargs), targets)
        loss.backward()
        opt_step()
        return loss.detach()

    return step


def autocast_closure_step(
    model: Any,
    opt: Any,
    opt_step: Callable[[], Any],
    loss_fn: Callable,
    targets: Any,
    device_type: str,
    dtype: Any,
) -> Callable[..., Any]:
    """`closure_step` with the forward and loss under torch.autocast (AMP recipe: backward outside)."""

    def step(*inputs: Any, **kwargs: Any) -> Any:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type, dtype=dtype):
            loss = loss_fn(model(*inputs, **kwargs), targets)
        loss.backward()
        opt_step()
        return loss.detach()

    return step


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
        self.body = None if spec.train_step is not None else self._closure(way, backend, mode)

    def _closure(self, way: str, backend: str, mode: str | None) -> Callable[..., Any]:
        """The default step written as a closure over this copy's model (compiled for 'model'),
        optimizer (its step compiled alone for 'optimizer'), loss function and targets."""
        from ..probes.first_call import build

        s = self.spec
        opt_step = self.optimizer.step
        if way == "optimizer":
            opt_step = build(opt_step_of(self.optimizer), backend, mode, s.compile_kwargs)
        parts = (self.forward, self.optimizer, opt_step, s.loss_fn, s.targets)
        if s.autocast is None:
            return closure_step(*parts)
        return autocast_closure_step(*parts, s.device_type, s.autocast)

    def step(self, *inputs: Any, **kwargs: Any) -> Any:
        """Not compiled itself (see the module docstring): it calls the frame that is."""
        if self.body is not None:
            return self.body(*inputs, **kwargs)
        s = self.spec
        if s.autocast is None:
            return s.train_step(self.forward, self.optimizer, inputs, s.targets)
        with torch.autocast(s.device_type, dtype=s.autocast):
            return s.train_step(self.forward, self.optimizer, inputs, s.targets)

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
