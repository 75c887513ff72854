"""The shape settings torch.compile is given, declared once for both tables that compare them: the
dynamic-shape table of the analysis's shape variants (experiments/strategies.py `run_dynamic`,
specs.py `DynamicSpec`) and the serving strategies on the traffic (run/serving/strategies.py); and
the helpers both use to find the dimensions that vary across calls, name them and mark them
dynamic.

One table, two readings of its `dynamic`: the dynamic-shape table compares the settings themselves,
so it drops the target's own `dynamic` and passes the setting's (`compare_kwargs`: None passed as
such; KEEP: not passed, PyTorch's default); the serving strategies are each compared with the
target as it compiles, so they override the target's `dynamic` only where a setting fixes it
(`served_override`: True or False; `mark_dynamic` then works with the target's own).

Torch-free at import (specs.py, which the parent imports, reads the labels); `mark_dims` imports
torch when it runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ..target.workload import iter_tensors

KEEP = "keep"  # a setting that leaves `dynamic` as the compile arguments give it


@dataclasses.dataclass(frozen=True)
class ShapeSetting:
    """One shape setting: torch.compile's `dynamic` it sets (True, False, None or KEEP), its row
    in the dynamic-shape table (`label`; None: not compared there) and in the serving strategies
    table (`served`; None: not served)."""

    name: str
    dynamic: bool | None | str
    label: str | None
    served: str | None


SETTINGS = {
    s.name: s
    for s in (
        ShapeSetting("static", False, "dynamic=False", "static shapes: dynamic=False"),
        ShapeSetting(
            "automatic",
            KEEP,
            "dynamic=None (automatic)",
            "torch.compile as the target compiles it (automatic dynamic shapes)",
        ),
        ShapeSetting("dynamic", True, "dynamic=True", "dynamic=True"),
        ShapeSetting(
            "marked",
            None,
            "mark_dynamic on the changing dims",
            "mark_dynamic on the dimensions that vary",
        ),
        ShapeSetting(
            "padded",
            False,
            None,
            "padded to the Traffic's buckets (static), the other varying dims marked dynamic",
        ),
        ShapeSetting(
            "regional", KEEP, None, "regional compilation: the repeated block compiled alone"
        ),
    )
}
# the dynamic-shape table's settings and labels, in its order
DYNAMIC_LABELS = {n: s.label for n, s in SETTINGS.items() if s.label is not None}
# the serving strategies table's labels (its reference, "automatic", first)
SERVED_LABELS = {n: s.served for n, s in SETTINGS.items() if s.served is not None}


def compare_kwargs(kwargs: dict, name: str) -> dict:
    """`kwargs` with `dynamic` as setting `name` sets it, the target's own dropped (the
    dynamic-shape table's reading; an unknown name sets nothing)."""
    out = {k: v for k, v in kwargs.items() if k != "dynamic"}
    setting = SETTINGS.get(name)
    if setting is not None and setting.dynamic != KEEP:
        out["dynamic"] = setting.dynamic
    return out


def served_override(name: str) -> dict:
    """The compile argument a serving strategy puts over the target's: `dynamic` where the
    setting fixes it (True or False), else nothing."""
    setting = SETTINGS.get(name)
    if setting is not None and isinstance(setting.dynamic, bool):
        return {"dynamic": setting.dynamic}
    return {}


def changing_dims(calls: Iterable[Any]) -> list[tuple[int, int]]:
    """(tensor index, dim) of every dimension whose size differs from the first call's in some
    later call (tensors of the same rank as the first call's, in iter_tensors order). `calls`: the
    calls' arguments, consumed once (a traffic's requests are made as they are read)."""
    base: list[tuple[int, ...]] | None = None
    seen: set[tuple[int, int]] = set()
    for args in calls:
        shapes = [tuple(t.shape) for t in iter_tensors(args)]
        if base is None:
            base = shapes
            continue
        for i, s in enumerate(shapes):
            if i < len(base) and len(s) == len(base[i]):
                seen |= {(i, d) for d in range(len(s)) if s[d] != base[i][d]}
    return sorted(seen)


def mark_dims(args: Any, dims: list[tuple[int, int]]) -> None:
    """`torch._dynamo.mark_dynamic` on each of `dims` of the call's tensors (those it has)."""
    import torch

    tensors = list(iter_tensors(args))
    for i, d in dims:
        if i < len(tensors) and d < tensors[i].dim():
            torch._dynamo.mark_dynamic(tensors[i], d)


def tensor_names(ca: Any) -> list[str]:
    """How the user would name each input tensor, in iter_tensors order: args[0], attention_mask, …"""
    names = []
    for label, value in [(f"args[{j}]", a) for j, a in enumerate(ca.args)] + list(
        ca.kwargs.items()
    ):
        names += [label if t is value else f"a tensor inside {label}" for t in iter_tensors(value)]
    return names


def dim_names(ca: Any, dims: list[tuple[int, int]]) -> list[str]:
    """Each of `dims` as the user would name it: "args[0] dim 1"."""
    names = tensor_names(ca)
    return [f"{names[i] if i < len(names) else f'tensor {i}'} dim {d}" for i, d in dims]
