"""Resolve `path.py:function` into a Workload, with one clear error for each way it can go wrong."""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from typing import Callable

from ..errors import TargetError, UserCodeError
from .userframes import describe_exception, where_str
from .workload import Workload, coerce


def split_target(target: str) -> tuple[str, str]:
    path, sep, func = target.rpartition(":")
    if not sep or not path or not func:
        raise TargetError(f"target must look like path.py:function, got {target!r}")
    return path, func


def precheck(target: str) -> tuple[str, str]:
    """Cheap checks the parent can do without importing torch or running user code."""
    path, func = split_target(target)
    if not os.path.isfile(path):
        raise TargetError(f"file not found: {path}")
    try:
        with open(path, "rb") as fh:
            source = fh.read()
        ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise TargetError(f"syntax error in {path} line {exc.lineno}: {exc.msg}") from None
    except (OSError, ValueError) as exc:
        raise TargetError(f"cannot read {path}: {exc}") from None
    if not func.isidentifier():
        raise TargetError(f"not a function name: {func!r}")
    return os.path.abspath(path), func


def load(target: str) -> Workload:
    """Import the file (its folder on sys.path, like pytest) and call the function."""
    return load_with_rebuild(target)[0]


def _seed() -> None:
    """Every RNG reset before build(): each process (cold, warm, strategies) builds the same weights."""
    from .pristine import reset_rng_state

    reset_rng_state()


def load_with_rebuild(target: str) -> tuple[Workload, Callable[[], Workload]]:
    """The workload, and a function that calls build() again (RNG reset first) for another fresh copy."""
    path, func = precheck(target)
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    modname = "_tcdoctor_target_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure of user code is reported, not raised
        d = describe_exception(exc)
        raise UserCodeError(
            f"importing {path} raised {d['message']}{where_str(d['where'])}"
        ) from None
    fn = getattr(module, func, None)
    if fn is None:
        raise TargetError(f"{os.path.basename(path)} has no function {func!r}")
    if not callable(fn):
        raise TargetError(
            f"{func} in {os.path.basename(path)} is a {type(fn).__name__}, not a function"
        )
    try:
        _seed()
        result = fn()
    except TypeError as exc:
        if (
            "required positional argument" in str(exc)
            or "missing" in str(exc)
            and "argument" in str(exc)
        ):
            raise TargetError(f"{func}() must take no arguments: {exc}") from None
        d = describe_exception(exc)
        raise UserCodeError(f"{func}() raised {d['message']}{where_str(d['where'])}") from None
    except Exception as exc:  # noqa: BLE001
        d = describe_exception(exc)
        raise UserCodeError(f"{func}() raised {d['message']}{where_str(d['where'])}") from None
    try:
        workload = coerce(result)
    except TypeError as exc:
        raise TargetError(f"{func}() {exc}") from None
    name = workload.name or f"{os.path.basename(path)}:{func}"
    workload.name = name

    def rebuild() -> Workload:
        _seed()
        again = coerce(fn())
        again.name = name
        return again

    return workload, rebuild
