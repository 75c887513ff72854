"""Training steps on fresh copies, in the four ways they can be compiled.

eager      the step as written
model      torch.compile(model), the rest eager
step       torch.compile of the whole step (zero_grad, forward, loss, backward, optimizer.step)
optimizer  only optimizer.step compiled (PyTorch's "Compiling the optimizer" recipe)
"""
from __future__ import annotations

import copy
from typing import Any, Callable


from .workload import TrainStep

WAYS = ("eager", "model", "step", "optimizer")


def replicate(spec: TrainStep) -> tuple[Any, Any]:
    """A deep copy of the model and an optimizer of the same kind and state on the copy's parameters."""
    model = copy.deepcopy(spec.model)
    opt = spec.optimizer
    if opt is None:
        return model, None
    by_id = {id(p): q for p, q in zip(spec.model.parameters(), model.parameters())}
    groups = [{**{k: v for k, v in g.items() if k != "params"}, "params": [by_id[id(p)] for p in g["params"]]} for g in opt.param_groups]
    new = type(opt)(groups)
    new.load_state_dict(copy.deepcopy(opt.state_dict()))
    return model, new


def _default_step(model: Any, opt: Any, inputs: tuple, targets: Any, loss_fn: Callable, opt_step: Callable) -> Any:
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(*inputs), targets)
    loss.backward()
    opt_step()
    return loss.detach()


class StepRunner:
    """Callable(*inputs) running one step of `spec` on its own model/optimizer copy, compiled `way`."""

    def __init__(self, spec: TrainStep, way: str = "eager", backend: str = "inductor", mode: str | None = None):
        if way not in WAYS:
            raise ValueError(f"unknown way {way!r}")
        if way == "optimizer" and (spec.optimizer is None or spec.train_step is not None):
            raise ValueError("compiling only optimizer.step needs TrainStep(optimizer=...) without a custom train_step")
        from .probes.compile import build

        self.spec, self.way = spec, way
        self.model, self.optimizer = replicate(spec)
        self.forward = build(self.model, backend, mode, spec.compile_kwargs) if way == "model" else self.model
        self.opt_step = self.optimizer.step if self.optimizer is not None else (lambda: None)
        if way == "optimizer":
            self.opt_step = build(self._plain_opt_step, backend, mode, spec.compile_kwargs)

    def _plain_opt_step(self) -> None:
        self.optimizer.step()

    def step(self, *inputs: Any) -> Any:
        s = self.spec
        if s.train_step is not None:
            return s.train_step(self.forward, self.optimizer, inputs, s.targets)
        return _default_step(self.forward, self.optimizer, inputs, s.targets, s.loss_fn, self.opt_step)

    def __call__(self, *inputs: Any) -> Any:
        return self.step(*inputs)


def subjects(spec: TrainStep, way: str, backend: str, mode: str | None) -> tuple[Callable, Callable]:
    """(eager step, step compiled `way`), each on its own fresh copy; 'step' compiles the whole function."""
    from .probes.compile import build

    eager = StepRunner(spec, "eager")
    if way == "step":
        runner = StepRunner(spec, "eager")
        return eager, build(runner.step, backend, mode, spec.compile_kwargs)
    return eager, StepRunner(spec, way, backend, mode)
