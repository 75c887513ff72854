"""Resolve `path.py:function` into a Workload, with one clear error for each way it can go wrong."""

from __future__ import annotations

import ast
import difflib
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
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise TargetError(f"syntax error in {path} line {exc.lineno}: {exc.msg}") from None
    except (OSError, ValueError) as exc:
        raise TargetError(f"cannot read {path}: {exc}") from None
    if not func.isidentifier():
        raise TargetError(f"not a function name: {func!r}")
    if not _may_bind(tree, func):  # a typo answered now, not after the module's `import torch`
        defs = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        raise TargetError(_no_function(path, func, defs))
    return os.path.abspath(path), func


# calls through which a module can bind a name that no statement names
_DYNAMIC = {"globals", "locals", "vars", "exec", "eval", "setattr", "__import__"}


def _may_bind(tree: ast.Module, name: str) -> bool:
    """Whether running the module could give it the attribute `name`, judged from its parse and
    erring towards yes: the name appears anywhere (a def, a class, an assignment, an import, any
    use, an attribute, a string), or the module binds names a parse cannot follow (a star import,
    a module `__getattr__`, globals()/exec/setattr and kin). Dunder names are always possible
    (every module has `__doc__`)."""
    if name.startswith("__") and name.endswith("__"):
        return True
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in (name, "__getattr__"):
                return True
        elif isinstance(node, ast.alias):
            if node.name == "*" or (node.asname or node.name).split(".")[0] == name:
                return True
        elif isinstance(node, ast.Call):
            f = node.func
            if (f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)) in _DYNAMIC:
                return True
        elif isinstance(node, ast.Name) and node.id == name:
            return True
        elif isinstance(node, ast.Attribute) and node.attr in (name, "__class__", "__dict__"):
            return True
        elif isinstance(node, ast.Constant) and node.value == name:
            return True
        elif name in (getattr(node, "names", None) or ()) or name in (
            getattr(node, "name", None),
            getattr(node, "rest", None),
        ):
            return True  # global/nonlocal, except ... as, match captures
    return False


def _no_function(path: str, func: str, names: list[str]) -> str:
    """The one line for a target function that is not there, with the closest names if any."""
    near = difflib.get_close_matches(func, names, n=3, cutoff=0.75)
    hint = f" (did you mean {', '.join(map(repr, near))}?)" if near else ""
    return f"{os.path.basename(path)} has no function {func!r}{hint}"


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
        names = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        raise TargetError(_no_function(path, func, names))
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
