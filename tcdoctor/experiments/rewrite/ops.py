"""What both custom-op rules write (torch-free): TCD105 wraps one line, TCD106 a whole helper.

- `op_name`: the op's name, `tcdoctor_patch::<file stem>_<function>_l<line>` (an identifier: a
  custom op's name must be one, and the line keeps two ops of one file apart);
- `param_types`: each input's annotation (`torch.Tensor`, `int`, `float`, `bool`) from what the
  eager run observed: a custom op's schema is inferred from them, and takes nothing else;
- `fake`: the fake implementation's return expression, from the shape rule (op_shapes.py), the
  dtype (the array input's, or a fixed one) and the device (the input's, or the CPU).

Pitfall: the observed dtype names are torch's (`float32`), checked to be plain names before they
are written into code.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from . import op_shapes
from .base import NoRewrite, Value

OBSERVED_SCALARS = {"int": "int", "float": "float", "bool": "bool"}


def op_name(file: str | None, function: str, line: int) -> str:
    stem = PurePath(file).name.split(".")[0] if file else "module"
    name = re.sub(r"\W", "_", f"{stem}_{function}_l{line}", flags=re.ASCII)
    return name if name[0].isalpha() else f"m_{name}"


def known_dtype(observed: Value) -> bool:
    return bool(re.fullmatch(r"(torch\.)?[a-z][a-z0-9_]*", observed.dtype or ""))


def dtype(observed: Value) -> str:
    """`torch.float32` from an observed "float32" (or "torch.float32")."""
    return "torch." + str(observed.dtype).removeprefix("torch.")


def param_types(
    names: list[str], seen: dict[str, Value], family: str
) -> dict[str, str] | NoRewrite:
    """Each input's annotation from the observed eager run, or why one cannot be an op's input."""
    types: dict[str, str] = {}
    for name in names:
        kind = seen.get(name, Value()).type
        if kind == "tensor" and not known_dtype(seen[name]):
            return NoRewrite(f"input {name}'s observed dtype is not a torch dtype name", family)
        if kind == "tensor":
            types[name] = "torch.Tensor"
        elif kind in OBSERVED_SCALARS:
            types[name] = OBSERVED_SCALARS[kind]
        else:
            return NoRewrite(
                f"input {name} is {kind or 'not observed'}: a custom op takes tensors, ints, floats "
                "and bools",
                family,
            )
    return types


def fake(
    shape: op_shapes.Shape,
    x: str,
    fixed_dtype: str | None,
    on_input: bool,
    broadcast: tuple[str, ...] = (),
) -> str:
    """The fake's return expression: empty_like when shape, dtype and device all follow the array
    input `x`, else torch.empty with each from its rule (`fixed_dtype`: a dtype other than x's,
    as code; `on_input`: on x's device, else the CPU; `broadcast`: inputs whose shapes the
    output's is broadcast with)."""
    if shape.kind == op_shapes.SAME and fixed_dtype is None and on_input and not broadcast:
        return f"torch.empty_like({x})"
    dt = f"{x}.dtype" if fixed_dtype is None else fixed_dtype
    device = f"{x}.device" if on_input else '"cpu"'
    size = shape.code(x)
    if broadcast:
        size = f"torch.broadcast_shapes({size}, {', '.join(f'{b}.shape' for b in broadcast)})"
    return f"torch.empty({size}, dtype={dt}, device={device})"


def broadcast(a: list[int] | None, b: list[int]) -> list[int] | None:
    """NumPy's broadcast of two shapes (None: they do not broadcast)."""
    if a is None:
        return None
    n = max(len(a), len(b))
    a2, b2 = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    if any(x != y and 1 not in (x, y) for x, y in zip(a2, b2)):
        return None
    return [max(x, y) if 1 in (x, y) else x for x, y in zip(a2, b2)]
