"""The spec a target's build() may return instead of a plain (model, inputs) tuple."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence, Union

Inputs = tuple
Variant = Union[tuple, Any, Callable[[Any], Any]]


@dataclasses.dataclass
class Workload:
    """What to analyse: a callable, its example inputs, and optional further calls.

    ``variants`` are fed, in order, to the same compiled model after ``inputs`` to expose
    recompiles: each is an input tuple (a single tensor is accepted) or a callable that takes
    the model and changes its state (``lambda m: m.eval()``), after which ``inputs`` are fed
    again. ``compile_kwargs`` go to ``torch.compile``. ``grad=False`` runs every call under
    ``torch.no_grad()`` (inference); a training workload is a separate spec so that this one
    stays stable.
    """

    model: Callable[..., Any]
    inputs: Inputs
    variants: Sequence[Variant] = ()
    compile_kwargs: dict = dataclasses.field(default_factory=dict)
    grad: bool = False
    name: str | None = None

    kind = "inference"

    def __post_init__(self) -> None:
        self.inputs = as_inputs(self.inputs)
        self.variants = list(self.variants)
        if not callable(self.model):
            raise TypeError(f"model must be an nn.Module or a callable, got {type(self.model).__name__}")
        if not isinstance(self.compile_kwargs, dict):
            raise TypeError("compile_kwargs must be a dict")


def as_inputs(value: Any) -> tuple:
    """A tuple of positional inputs; a lone tensor (or any non-tuple/list) becomes a 1-tuple."""
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    return (value,)


def coerce(result: Any) -> "Workload | TrainStep":
    """Turn what build() returned into a Workload or TrainStep, or raise TypeError saying what was wrong."""
    if isinstance(result, (Workload, TrainStep)):
        return result
    if isinstance(result, tuple) and len(result) == 2:
        model, inputs = result
        if not callable(model):
            raise TypeError(
                f"the first item must be an nn.Module or a callable, got {type(model).__name__}"
            )
        return Workload(model, inputs)
    got = type(result).__name__
    if isinstance(result, tuple):
        got = f"a tuple of {len(result)} items"
    raise TypeError(f"must return (model, example_inputs), tcdoctor.Workload or tcdoctor.TrainStep, got {got}")


@dataclasses.dataclass
class TrainStep:
    """A training workload: one step is zero_grad → forward → loss → backward → optimizer.step.

    Give ``loss_fn(output, targets)`` and ``optimizer`` (built on ``model.parameters()``), or a
    ``train_step(model, optimizer, inputs, targets)`` of your own. Every way of compiling is measured
    on a fresh copy of the model and optimizer, so no way trains the model another one measures.
    """

    model: Any
    inputs: Inputs
    targets: Any = None
    loss_fn: Callable[[Any, Any], Any] | None = None
    optimizer: Any = None
    train_step: Callable[..., Any] | None = None
    compile_kwargs: dict = dataclasses.field(default_factory=dict)
    name: str | None = None

    kind = "train"
    grad = True
    variants: Sequence[Variant] = ()

    def __post_init__(self) -> None:
        self.inputs = as_inputs(self.inputs)
        self.variants = []
        if self.train_step is None and (self.loss_fn is None or self.optimizer is None):
            raise TypeError("TrainStep needs loss_fn and optimizer, or a train_step(model, optimizer, inputs, targets)")
        if not isinstance(self.compile_kwargs, dict):
            raise TypeError("compile_kwargs must be a dict")
