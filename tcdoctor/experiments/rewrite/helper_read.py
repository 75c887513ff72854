"""How TCD106 reads a helper (torch-free): its body as a chain of values, to the tensor (or the
tuple of tensors) it returns.

Each assignment binds a local name: a tensor parameter read through `.detach()`, `.cpu()`
(`.float()`, ...) and `.numpy()` is an array; a library function with a shape rule (op_shapes.py)
applied to an array is an array of the shape its rule gives (one reduction at most); NumPy's
conversions (`np.asarray`, `np.ascontiguousarray`, `np.array`, `y.astype`, `y.copy()`) keep the
shape and may fix the dtype; an array with a number (`y * strength`, `a ** 2`, `e > threshold`)
keeps the array's shape (a comparison makes it bool); an array with another array parameter
read whole (`y * gain.numpy()`, a method's NumPy attribute) broadcasts the two shapes;
`torch.from_numpy` / `torch.as_tensor` make the tensor the helper returns, with `.to(x.device)`
(or `device=x.device`), `.to(dtype)`, `.to(x.dtype)` (the input's dtype), `.float()`,
`.contiguous()` after. An assignment that reads no array is a value the op computes as before
(`k = int(3 * sigma)`). `return a, b` returns a tuple of such tensors.

Not this rule's helper (`read` gives None, and TCD105 answers for the line as before): a branch,
a loop, an array read off its chain (`y.max()`). Refused (`Refuse`, whose reason the rule says,
and TCD107's fallback may then disable the helper): a statement or value with an effect (a list
append, a counter, a file, a log record: an op never stands for a write), a function whose
output length depends on the data (`np.flatnonzero`: a fake of one fixed shape would bake the
observed length into the graph).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import libcst as cst

from . import custom_op, effects, helper_method, op_shapes, tree
from .tree import Spot

ARRAY, RESULT, OTHER = "array", "tensor", "other"
# NumPy conversions that keep the shape -> the positional index of their dtype (None: none)
CONVERT = {
    "numpy.asarray": 1,
    "numpy.ascontiguousarray": 1,
    "numpy.asanyarray": 1,
    "numpy.asfortranarray": 1,
    "numpy.array": 1,
    "numpy.copy": None,
}
DTYPES = {  # a dtype literal (NumPy's or torch's name, or a builtin) -> torch's name
    **{n: n for n in "float16 float32 float64 int8 int16 int32 int64 uint8 complex64".split()},
    "complex128": "complex128",
    "bool_": "bool",
    "bool": "bool",
    "half": "float16",
    "single": "float32",
    "double": "float64",
    "float": "float64",  # the builtin, as NumPy reads it
    "int": "int64",
    "long": "int64",
}
TORCH_METHOD_DTYPE = {"float": "float32", "double": "float64", "half": "float16"}
KEEP = frozenset({"contiguous", "clone", "detach"})


@dataclass(frozen=True)
class Value:
    """A local's value as the rule reads it: an array or the tensor made from one (its shape rule
    from the array parameter `source`, a fixed dtype or None, whether no library call changed the
    dtype since, its device), or OTHER (a value that reads no array)."""

    kind: str
    source: str = ""
    shape: op_shapes.Shape = op_shapes.Shape(op_shapes.SAME)
    dtype: str | None = None
    keeps: bool = True
    device: str = "cpu"  # "cpu" | "input"
    rules: tuple[str, ...] = ()  # the shape rules applied, described
    broadcast: tuple[str, ...] = ()  # array parameters the shape is broadcast with


class Refuse(Exception):
    """Why the helper the rule reads cannot be an op (a state write, a data-dependent length)."""


@dataclass
class Helper:
    """The helper read whole: its def (a method: as the module-level function the op is), the
    op's parameters, the returned values (several: a tuple), the break's line; for a method,
    the method itself, its class and the attributes it reads."""

    func: cst.FunctionDef
    params: list[str]
    results: tuple[Value, ...]
    line: int
    env: dict[str, Value] = field(default_factory=dict)
    several: bool = False  # returns a tuple
    method: cst.FunctionDef | None = None
    klass: cst.ClassDef | None = None
    attrs: helper_method.Attrs = helper_method.Attrs(())

    @property
    def result(self) -> Value:
        return self.results[0]

    @property
    def name(self) -> str:
        """The helper as its callers name it (`smooth`, `Equalizer._equalize`)."""
        if self.method is None or self.klass is None:
            return self.func.name.value
        return f"{self.klass.name.value}.{self.method.name.value}"

    def key(self, param: str) -> str:
        """The name the eager run observed `param` by (an attribute's: `self.gain`)."""
        by_param = {p: f"self.{a}" for a, p in self.attrs.names}
        return by_param.get(param, param)


# ---------------------------------------------------------------------------------------------
# reading the helper


def _dtype_literal(spot: Spot, node: cst.BaseExpression) -> str | None:
    """The torch dtype name a literal names (`np.float32`, `"float32"`, `torch.float64`,
    `float`), None for anything else."""
    if isinstance(node, cst.SimpleString):
        return DTYPES.get(node.evaluated_value if isinstance(node.evaluated_value, str) else "")
    full = tree.resolve(spot, node) if tree.dotted(node) else None
    if full is None:
        return None
    head, _, name = full.rpartition(".")
    if head in ("numpy", "torch") or (not head and name in ("float", "int", "bool")):
        return DTYPES.get(name)
    return None


def _numpy_read(spot: Spot, node: cst.Call, params: list[str]) -> Value | None:
    """`x.detach().cpu().numpy()` on a parameter: the array, its dtype fixed by `.float()` etc."""
    dtype: str | None = None
    inner: cst.BaseExpression = node.func.value  # type: ignore[attr-defined]
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and not inner.args:
        method = inner.func.attr.value
        if method in TORCH_METHOD_DTYPE:
            dtype = dtype or TORCH_METHOD_DTYPE[method]
        elif method not in ("detach", "cpu", "contiguous", "clone"):
            return None
        inner = inner.func.value
    if isinstance(inner, cst.Name) and inner.value in params:
        return Value(ARRAY, inner.value, dtype=dtype)
    return None


def _reads_array(node: cst.CSTNode, env: dict[str, Value]) -> bool:
    """Whether `node` reads an array or a tensor made from one, or calls `.numpy()`."""
    if tree.method_calls(node, "numpy"):
        return True
    return any(env.get(n, Value(OTHER)).kind != OTHER for n in tree.reads(node))


# modules whose functions write state outside the helper (a log, a file, the process)
STATE_MODULES = frozenset({"logging", "warnings", "os", "shutil", "sys", "json", "pickle", "csv"})
STATE_BUILTINS = frozenset({"open", "print", "input", "exec", "eval", "setattr", "next"})


def _state_write(spot: Spot, node: cst.CSTNode, params: list[str], env: dict) -> str | None:
    """The call in a value that writes state outside the helper (None: none does): a method of
    a module-level object (`HISTORY.append(...)`, `logger.info(...)`, `counter.bump()`), a
    builtin that writes (`open`, `print`, `next`), a function of a module that writes
    (`logging`, `os`, ...), an in-place method on a parameter (`x.add_(1)`). A call of a
    library function (`np.hanning(5)`) or a method of a local value is not a write."""
    for found in effects.effects(spot, node):
        call = found.node
        if not isinstance(call, cst.Call):
            return found.text
        func, root = call.func, tree.root(call.func)
        if isinstance(func, cst.Name):
            if func.value in STATE_BUILTINS or tree.resolve(spot, func) is None:
                return found.text
            if tree.resolve(spot, func).split(".")[0] in STATE_MODULES:  # type: ignore[union-attr]
                return found.text
            continue
        if root in spot.imports:
            if (tree.resolve(spot, func) or "").split(".")[0] in STATE_MODULES:
                return found.text
            continue
        if root in params or root in env:
            if isinstance(func, cst.Attribute) and func.attr.value.endswith("_"):
                return found.text  # in place on an input
            continue
        return found.text  # a method of a module-level object
    return None


def _first(call: cst.Call) -> cst.BaseExpression | None:
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return positional[0] if positional else None


def _library(spot: Spot, call: cst.Call, full: str, arg: Value) -> Value | None:
    """A NumPy conversion or a library function with a shape rule, applied to an array."""
    rest = [a for a in call.args if a.value is not _first(call)]
    if full in CONVERT:
        at = CONVERT[full]
        named = {a.keyword.value: a.value for a in rest if a.keyword is not None}
        positional = [a.value for a in call.args if a.keyword is None]
        node = named.get("dtype") or (
            positional[at] if at is not None and len(positional) > at else None
        )
        if node is None:
            return arg
        fixed = _dtype_literal(spot, node)
        return replace(arg, dtype=fixed, keeps=fixed is not None)
    if full in op_shapes.DATA_DEPENDENT:
        raise Refuse(
            f"the length of {full}'s output depends on the data: a fake of one fixed shape "
            "would bake the observed length into the graph"
        )
    shape = op_shapes.shape_of(full, call)
    if isinstance(shape, str) or tree.is_torch(full):
        return None
    if arg.broadcast and shape.kind != op_shapes.SAME:
        return None  # a reduction of a broadcast: no rule composes them here
    if arg.shape.kind != op_shapes.SAME and shape.kind != op_shapes.SAME:
        return None  # two reductions: no rule composes them here
    composed = shape if shape.kind != op_shapes.SAME else arg.shape
    rules = (*arg.rules, shape.describe(full))
    return replace(arg, shape=composed, dtype=None, keeps=False, rules=rules)


def _tensor_of(spot: Spot, call: cst.Call, arg: Value) -> Value | None:
    """`torch.from_numpy(a)` / `torch.as_tensor(a, dtype=..., device=x.device)`."""
    value = replace(arg, kind=RESULT)
    for a in call.args[1:]:
        key = a.keyword.value if a.keyword is not None else None
        if key == "device" and _is_device_of(a.value, arg.source):
            value = replace(value, device="input")
        elif key == "dtype" and _is_device_of(a.value, arg.source, "dtype"):
            value = replace(value, dtype=None, keeps=True)
        elif key == "dtype" and _dtype_literal(spot, a.value):
            value = replace(value, dtype=_dtype_literal(spot, a.value), keeps=True)
        else:
            return None
    return value


def _is_device_of(node: cst.BaseExpression, param: str, attr: str = "device") -> bool:
    """`<param>.device` (or `<param>.<attr>`)."""
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value == attr
        and isinstance(node.value, cst.Name)
        and node.value.value == param
    )


def _method(spot: Spot, call: cst.Call, arg: Value) -> Value | None:
    """A method of an array (`astype`, `copy`) or of the tensor made from one (`to`, `float`,
    `contiguous`, ...)."""
    method = call.func.attr.value  # type: ignore[attr-defined]
    args = [a.value for a in call.args]
    if arg.kind == ARRAY and method == "copy" and not args:
        return arg
    if arg.kind == ARRAY and method == "astype" and args:
        fixed = _dtype_literal(spot, args[0])
        return replace(arg, dtype=fixed, keeps=fixed is not None)
    if arg.kind != RESULT:
        return None
    if method in KEEP and not args:
        return arg
    if method in TORCH_METHOD_DTYPE and not args:
        return replace(arg, dtype=TORCH_METHOD_DTYPE[method], keeps=True)
    if method == "cpu" and not args:
        return replace(arg, device="cpu")
    if method == "to" and len(args) == 1:
        if _is_device_of(args[0], arg.source):
            return replace(arg, device="input")
        if _is_device_of(args[0], arg.source, "dtype"):
            return replace(arg, dtype=None, keeps=True)  # the input's dtype
        fixed = _dtype_literal(spot, args[0])
        return replace(arg, dtype=fixed, keeps=True) if fixed else None
    return None


def _eval(spot: Spot, node: cst.BaseExpression, env: dict, params: list[str]) -> Value | None:
    """The value of an expression of the helper's chain, or None: not a step the rule reads."""
    if isinstance(node, cst.Name) and node.value in env:
        return env[node.value]
    if not _reads_array(node, env):
        what = _state_write(spot, node, params, env)
        if what is not None:
            raise Refuse(f"it writes Python state (`{what}`): an op never stands for a write")
        return Value(OTHER)
    if isinstance(node, cst.BinaryOperation):
        return _binary(spot, node.left, node.right, env, params)
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        value = _binary(spot, node.left, node.comparisons[0].comparator, env, params)
        return replace(value, dtype="bool", keeps=True) if value is not None else None
    if not isinstance(node, cst.Call):
        return None
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "numpy" and not node.args:
        return _numpy_read(spot, node, params)
    full = tree.resolve(spot, node.func) if tree.dotted(node.func) else None
    if full is None and isinstance(node.func, cst.Attribute):
        inner = _eval(spot, node.func.value, env, params)
        return _method(spot, node, inner) if inner is not None else None
    first = _first(node)
    arg = _eval(spot, first, env, params) if first is not None else None
    if full is None or arg is None or arg.kind != ARRAY:
        return None
    if any(_reads_array(a.value, env) for a in node.args if a.value is not first):
        return None  # a second array argument: no shape rule reads two
    if full in custom_op.CONVERTERS:
        return _tensor_of(spot, node, arg)
    return _library(spot, node, full, arg)


def _binary(
    spot: Spot, left: cst.BaseExpression, right: cst.BaseExpression, env: dict, params: list[str]
) -> Value | None:
    """An array with a number (`y * strength`, `a ** 2`, `e > threshold`): the array's shape;
    with another array parameter read whole (`y * gain.numpy()`): the two shapes broadcast."""
    a, b = _eval(spot, left, env, params), _eval(spot, right, env, params)
    if a is None or b is None or RESULT in (a.kind, b.kind):
        return None
    if a.kind == ARRAY and b.kind == ARRAY:
        bare = [v for v in (b, a) if not v.rules and not v.broadcast]
        if not bare or a.source == b.source:
            return None  # two arrays off the chain: no rule composes them here
        other = bare[0]
        base = a if other is b else b
        rules = (*base.rules, f"broadcast with {other.source}")
        return replace(
            base, broadcast=(*base.broadcast, other.source), dtype=None, keeps=False, rules=rules
        )
    array = a if a.kind == ARRAY else b
    if array.kind != ARRAY:
        return None
    return replace(array, dtype=None, keeps=False)


def read(spot: Spot, func: cst.FunctionDef) -> Helper | None:
    """The helper's chain, statement by statement, to the tensor it returns."""
    params = tree.params(func)
    body = list(func.body.body)
    if body and tree.is_docstring(body[0]):
        body = body[1:]
    env: dict[str, Value] = {}
    for stmt in body[:-1]:
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return None
        small = stmt.body[0]
        if isinstance(small, cst.Expr) and effects.effects(spot, small.value):
            what = effects.effects(spot, small.value)[0].text
            raise Refuse(f"it writes Python state (`{what}`): an op never stands for a write")
        if not isinstance(small, cst.Assign):
            return None
        if len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
            return None
        name = small.targets[0].target.value
        value = _eval(spot, small.value, env, params)
        if value is None or name in params:
            return None
        env[name] = value
    last = body[-1] if body else None
    if not isinstance(last, cst.SimpleStatementLine) or len(last.body) != 1:
        return None
    ret = last.body[0]
    if not isinstance(ret, cst.Return) or ret.value is None:
        return None
    several = isinstance(ret.value, cst.Tuple)
    items = [e.value for e in ret.value.elements] if several else [ret.value]  # type: ignore[attr-defined]
    results = [_eval(spot, item, env, params) for item in items]
    if not results or any(r is None or r.kind != RESULT for r in results):
        return None
    return Helper(func, params, tuple(results), spot.site.line, env, several)  # type: ignore[arg-type]
