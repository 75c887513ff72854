"""The spec a target's build() may return instead of a plain (model, inputs) tuple.

Calls are made as people make them: positional ``inputs`` plus keyword ``kwargs`` (HF-style
``model(**batch)`` is ``Workload(model, (), kwargs=batch)`` or ``return model, (), batch``), under
``torch.no_grad()`` unless ``grad=True``, and under ``torch.autocast`` when ``autocast`` names a dtype.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable, Iterator, Sequence, Union

Inputs = tuple
Variant = Union[tuple, dict, Any, Callable[[Any], Any]]


@dataclasses.dataclass
class CallArgs:
    """One call's arguments: ``fn(*args, **kwargs)``."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)

    def apply(self, fn: Callable[..., Any]) -> Any:
        return fn(*self.args, **self.kwargs)

    def values(self) -> list:
        """Positional values then keyword values, in order (where tensors are looked for)."""
        return list(self.args) + list(self.kwargs.values())


def is_state_change(variant: Any) -> bool:
    """A variant that is a callable taking the model (``lambda m: m.train()``), not call arguments."""
    import torch

    return callable(variant) and not isinstance(variant, (torch.Tensor, tuple, list, dict))


class _CallSpec:
    """What Workload and TrainStep share: how one call is made."""

    inputs: tuple
    kwargs: dict
    grad: bool
    autocast: Any
    kind: str

    @property
    def call_args(self) -> CallArgs:
        return CallArgs(self.inputs, self.kwargs)

    def variant_args(self, variant: Any) -> CallArgs:
        """A tuple replaces the positional args (kwargs kept); a dict replaces the kwargs (args kept)."""
        if isinstance(variant, dict):
            return CallArgs(self.inputs, dict(variant))
        return CallArgs(as_inputs(variant), self.kwargs)

    device_type = "cpu"  # set by the analysis once the device is known (autocast needs it)

    def context(self, device_type: str | None = None) -> contextlib.AbstractContextManager:
        """no_grad unless grad=True, plus autocast(device_type, dtype) when autocast is set.

        Entered around a compiled callable, never inside one (Dynamo does not trace an ExitStack)."""
        import torch

        stack = contextlib.ExitStack()
        if not self.grad:
            stack.enter_context(torch.no_grad())
        if self.autocasts_call:
            stack.enter_context(
                torch.autocast(device_type or self.device_type, dtype=self.autocast)
            )
        return stack

    @property
    def autocasts_call(self) -> bool:
        """Whether the whole call runs under autocast (a train step autocasts its forward only)."""
        return self.autocast is not None and self.kind != "train"

    def forward_context(self) -> contextlib.AbstractContextManager:
        """autocast(device_type, dtype) when autocast is set, else a no-op: for eager code only.

        Nothing compiled enters it: the training step writes its `torch.autocast` out
        (training.autocast_closure_step), because any wrapper of tcdoctor's inside a compiled
        frame can add a break, a frame or a guard to what is counted as the user's."""
        import torch

        if self.autocast is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.autocast)

    def _check_common(self) -> None:
        self.inputs = as_inputs(self.inputs)
        self.kwargs = dict(self.kwargs or {})
        if not all(isinstance(k, str) for k in self.kwargs):
            raise TypeError("kwargs must be a dict with string keys")
        if not isinstance(self.compile_kwargs, dict):  # type: ignore[attr-defined]
            raise TypeError("compile_kwargs must be a dict")
        if self.autocast is not None:
            import torch

            if not isinstance(self.autocast, torch.dtype):
                raise TypeError(
                    f"autocast must be a torch dtype such as torch.bfloat16, got {self.autocast!r}"
                )


@dataclasses.dataclass
class Workload(_CallSpec):
    """What to analyse: a callable, its example inputs, and optional further calls.

    ``variants`` are fed, in order, to the same compiled model after the first call to expose
    recompiles: each is an input tuple (a single tensor is accepted; kwargs stay), a dict of
    keyword arguments (positional inputs stay), or a callable that takes the model and changes
    its state (``lambda m: m.eval()``), after which the inputs are fed again. ``compile_kwargs``
    go to ``torch.compile``. ``grad=False`` runs every call under ``torch.no_grad()``
    (inference); ``autocast=torch.bfloat16`` runs every call under ``torch.autocast``.
    ``traffic`` (a ``tcdoctor.Traffic``) is the requests the served model gets: the analysis then
    replays them (the report's serving section; target/traffic.py).
    """

    model: Callable[..., Any]
    inputs: Inputs = ()
    variants: Sequence[Variant] = ()
    compile_kwargs: dict = dataclasses.field(default_factory=dict)
    grad: bool = False
    name: str | None = None
    kwargs: dict = dataclasses.field(default_factory=dict)
    autocast: Any = None
    traffic: Any = None

    kind = "inference"

    def __post_init__(self) -> None:
        self.variants = list(self.variants)
        if not callable(self.model):
            raise TypeError(
                f"model must be an nn.Module or a callable, got {type(self.model).__name__}"
            )
        self._check_common()
        if self.traffic is not None:  # a tcdoctor.Traffic (target/traffic.py imports this module)
            if not getattr(type(self.traffic), "is_traffic", False):
                raise TypeError(
                    "traffic must be a tcdoctor.Traffic (a list of requests, a generator "
                    f"function, or Traffic.shapes(make, ...)), got {type(self.traffic).__name__}"
                )


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
    if isinstance(result, tuple) and len(result) in (2, 3):
        model = result[0]
        if not callable(model):
            raise TypeError(
                f"the first item must be an nn.Module or a callable, got {type(model).__name__}"
            )
        if len(result) == 3 and not isinstance(result[2], dict):
            raise TypeError(
                f"the third item must be a dict of keyword arguments, got {type(result[2]).__name__}"
            )
        return Workload(model, result[1], kwargs=result[2] if len(result) == 3 else {})
    got = type(result).__name__
    if isinstance(result, tuple):
        got = f"a tuple of {len(result)} items"
    raise TypeError(
        "must return (model, example_inputs), (model, args, kwargs), tcdoctor.Workload or tcdoctor.TrainStep, "
        f"got {got}"
    )


@dataclasses.dataclass
class TrainStep(_CallSpec):
    """A training workload: one step is zero_grad → forward → loss → backward → optimizer.step.

    Give ``loss_fn(output, targets)`` and ``optimizer`` (built on ``model.parameters()``), or a
    ``train_step(model, optimizer, inputs, targets)`` of your own (``inputs`` is then the positional
    tuple; keyword arguments need the default step). Every way of compiling is measured on a
    fresh copy of the model and optimizer, so no way trains the model another one measures.
    """

    model: Any
    inputs: Inputs = ()
    targets: Any = None
    loss_fn: Callable[[Any, Any], Any] | None = None
    optimizer: Any = None
    train_step: Callable[..., Any] | None = None
    compile_kwargs: dict = dataclasses.field(default_factory=dict)
    name: str | None = None
    kwargs: dict = dataclasses.field(default_factory=dict)
    autocast: Any = None

    kind = "train"
    grad = True
    variants: Sequence[Variant] = ()
    traffic: Any = None  # refused: a training step is trained, not served

    @property
    def step_form(self) -> str:
        """The function compiled when the step is compiled whole (experiments/training.py), as the
        report states it: graphs and breaks are counted for this form of the step.

        Pitfall, measured with torch 2.13 on tests/targets/ddp_mlp.py, 2 gloo ranks (docs/measuring.md,
        "Graph breaks"): the same step written with no arguments over module globals counts fewer
        (2 graphs and 4 breaks per rank against 4 and 7) because Dynamo compiles less of it, not better: the frame resuming after
        the first break (`zero_grad`) holds no tensor, so Dynamo skips it and the forward, loss
        and backward run uncompiled."""
        under = self.autocast is not None
        if self.train_step is not None:
            name = getattr(self.train_step, "__name__", "train_step")
            amp = ", called under torch.autocast" if under else ""
            return f"your own {name}(model, optimizer, inputs, targets), compiled as given{amp}"
        amp = ", forward and loss under torch.autocast" if under else ""
        return (
            "step(*inputs, **kwargs) closing over model, optimizer, loss_fn and targets, as "
            f"PyTorch's recipes write it{amp}; a no-argument step over module globals counts fewer "
            "graphs and breaks because Dynamo leaves its forward and backward uncompiled"
        )

    def __post_init__(self) -> None:
        self.variants = []
        if self.traffic is not None:
            raise TypeError(
                "TrainStep takes no traffic: a served model's requests are replayed for a "
                "Workload (return tcdoctor.Workload(model, inputs, traffic=...))"
            )
        if self.train_step is None and (self.loss_fn is None or self.optimizer is None):
            raise TypeError(
                "TrainStep needs loss_fn and optimizer, or a train_step(model, optimizer, inputs, targets)"
            )
        self._check_common()
        if self.train_step is not None and self.kwargs:
            raise TypeError(
                "TrainStep(kwargs=...) works with loss_fn/optimizer; a custom train_step gets positional inputs"
            )


def iter_tensors(obj: Any) -> Iterator[Any]:
    """Tensors inside nested tuples, lists, dicts and CallArgs, in order."""
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, CallArgs):
        for v in obj.values():
            yield from iter_tensors(v)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from iter_tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from iter_tensors(v)
