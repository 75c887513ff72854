"""TCD106 helper-op: a NumPy round-trip helper (tensor in, a library call on its data, NumPy to
tidy the result, tensor out) wrapped whole in a `torch.library.custom_op`.

Applies to a module-level function written as users write such helpers:

    def smooth(x, sigma=2.0):
        y = scipy.ndimage.gaussian_filter1d(x.detach().cpu().numpy(), sigma=sigma, axis=-1)
        y = np.ascontiguousarray(y)
        y = np.asarray(y, dtype=np.float32)
        return torch.from_numpy(y).to(x.device)

TCD105 wraps one line and refuses this one (the array `y` is used as an array on the next line);
yet the helper is tensor in, tensor out. The whole function becomes the op: decorated in place
with `@torch.library.custom_op`, its parameters annotated from the eager call observed, a fake
registered from the shape rule, and an autograd registration that marks the output
non-differentiable.

The body is read as a chain of values, each assignment to a local name: a tensor parameter read
through `.detach()`, `.cpu()` (`.float()`, ...) and `.numpy()` is an array; a library function
with a shape rule (op_shapes.py) applied to an array is an array of the shape its rule gives (one
reduction at most); NumPy's conversions (`np.asarray`, `np.ascontiguousarray`, `np.array`,
`y.astype`, `y.copy()`) keep the shape and may fix the dtype; `torch.from_numpy` /
`torch.as_tensor` make the tensor the helper returns, with `.to(x.device)` (or `device=x.device`),
`.to(dtype)`, `.float()`, `.contiguous()` after. An assignment that reads no array is a value the
op computes as before (`k = int(3 * sigma)`). Anything else (a branch, a loop, an array read off
its chain, such as `y.max()`) is not this rule's helper: TCD105 answers for the line as before.

Why a custom op and not `torch.compiler.disable`: disable keeps a graph break at every call of
the helper (PyTorch counts "Skip calling `torch.compiler.disable()`d function"); the op removes
it, and the compiled region runs through the call (on the sample helper, measured with PyTorch's
counters: 6 graphs and 2 breaks as written, 2 graphs and 1 break under disable, 1 graph and no
break as an op). The op costs a fake that must be right for every input, which the proof checks
(opcheck on every call observed, and the compiled copy on every variant).

Gradient: the original returns a tensor made from NumPy data, which never carries a gradient;
the op's output is marked non-differentiable (`ctx.mark_non_differentiable`), so its
`requires_grad` and every gradient are the original's (without the registration, a backward
through the op raises "no autograd formula").

Pitfalls: only a module-level function with no decorator, `*args` or `**kwargs`, whose defaults
are literals and whose name nothing else binds; existing annotations must be the types the
eager call observed. Where TCD105 can wrap the line alone, it does: this rule answers only where
it would not. The dtype is the one the chain fixes (`dtype=np.float32`), else the input's where
the observed call kept it, else the observed one. The op replaces the function for every caller:
a call elsewhere with another kind of argument (a NumPy array) would fail there, and the proof
sees only the workload's calls (hence unsafe).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import libcst as cst

from ...outcomes import Safety
from . import custom_op, op_shapes, ops, tree
from .base import Need, NoRewrite, OpPayload, Page, Result, Rewrite, Rule
from .tree import BLANK, Spot

CODE, NAME = "TCD106", "helper-op"
PROOF = "helper-op"  # its own proof: experiments/proving/proofs/helper_op.py
UNKNOWN = custom_op.UNKNOWN
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
class _Value:
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


@dataclass
class _Helper:
    """The helper read whole: its def, parameters, the returned value, the break's line."""

    func: cst.FunctionDef
    params: list[str]
    result: _Value
    line: int
    env: dict[str, _Value] = field(default_factory=dict)


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


def _numpy_read(spot: Spot, node: cst.Call, params: list[str]) -> _Value | None:
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
        return _Value(ARRAY, inner.value, dtype=dtype)
    return None


def _reads_array(node: cst.CSTNode, env: dict[str, _Value]) -> bool:
    """Whether `node` reads an array or a tensor made from one, or calls `.numpy()`."""
    if tree.method_calls(node, "numpy"):
        return True
    return any(env.get(n, _Value(OTHER)).kind != OTHER for n in tree.reads(node))


def _first(call: cst.Call) -> cst.BaseExpression | None:
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return positional[0] if positional else None


def _library(spot: Spot, call: cst.Call, full: str, arg: _Value) -> _Value | None:
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
    shape = op_shapes.shape_of(full, call)
    if isinstance(shape, str) or tree.is_torch(full):
        return None
    if arg.shape.kind != op_shapes.SAME and shape.kind != op_shapes.SAME:
        return None  # two reductions: no rule composes them here
    composed = shape if shape.kind != op_shapes.SAME else arg.shape
    rules = (*arg.rules, shape.describe(full))
    return replace(arg, shape=composed, dtype=None, keeps=False, rules=rules)


def _tensor_of(spot: Spot, call: cst.Call, arg: _Value) -> _Value | None:
    """`torch.from_numpy(a)` / `torch.as_tensor(a, dtype=..., device=x.device)`."""
    value = replace(arg, kind=RESULT)
    for a in call.args[1:]:
        key = a.keyword.value if a.keyword is not None else None
        if key == "device" and _is_device_of(a.value, arg.source):
            value = replace(value, device="input")
        elif key == "dtype" and _dtype_literal(spot, a.value):
            value = replace(value, dtype=_dtype_literal(spot, a.value), keeps=True)
        else:
            return None
    return value


def _is_device_of(node: cst.BaseExpression, param: str) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value == "device"
        and isinstance(node.value, cst.Name)
        and node.value.value == param
    )


def _method(spot: Spot, call: cst.Call, arg: _Value) -> _Value | None:
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
        fixed = _dtype_literal(spot, args[0])
        return replace(arg, dtype=fixed, keeps=True) if fixed else None
    return None


def _eval(spot: Spot, node: cst.BaseExpression, env: dict, params: list[str]) -> _Value | None:
    """The value of an expression of the helper's chain, or None: not a step the rule reads."""
    if isinstance(node, cst.Name) and node.value in env:
        return env[node.value]
    if not _reads_array(node, env):
        return _Value(OTHER)
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


def _read(spot: Spot, func: cst.FunctionDef) -> _Helper | None:
    """The helper's chain, statement by statement, to the tensor it returns."""
    params = tree.params(func)
    body = list(func.body.body)
    if body and tree.is_docstring(body[0]):
        body = body[1:]
    env: dict[str, _Value] = {}
    for stmt in body[:-1]:
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return None
        small = stmt.body[0]
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
    result = _eval(spot, ret.value, env, params)
    if result is None or result.kind != RESULT:
        return None
    return _Helper(func, params, result, spot.site.line, env)


def _refusal(spot: Spot, func: cst.FunctionDef) -> NoRewrite | None:
    """Why a helper the rule reads cannot become an op as it is written (None: it can)."""
    name, p = func.name.value, func.params
    if func.decorators:
        return NoRewrite(f"the helper {name}() is decorated: an op replaces what it defines", NAME)
    if isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None:
        return NoRewrite(f"the helper {name}() takes *args or **kwargs: an op's are fixed", NAME)
    every = [*p.posonly_params, *p.params, *p.kwonly_params]
    odd = [q for q in every if q.default is not None and not tree.is_constant(q.default)]
    if odd:
        return NoRewrite(
            f"the default of {odd[0].name.value} in {name}() is not a literal: an op's schema "
            "holds its defaults",
            NAME,
        )
    if len(tree.module_binds(spot, name)) != 1:
        return NoRewrite(f"{name} is bound more than once at module level", NAME)
    return None


def candidate(spot: Spot) -> _Helper | NoRewrite | None:
    """The helper around the line (None: not this rule's; TCD105's line patch comes first)."""
    funcs = spot.funcs()
    if len(funcs) != 1 or not isinstance(spot.parents.get(funcs[0]), cst.Module):
        return None
    if not isinstance(spot.stmt, cst.SimpleStatementLine):
        return None
    line_op = custom_op.candidate(spot)
    if line_op is not None and not isinstance(line_op, NoRewrite):
        return None  # TCD105 wraps the line alone
    helper = _read(spot, funcs[0])
    if helper is None:
        return None
    return _refusal(spot, funcs[0]) or helper


def _qualname(spot: Spot, func: cst.FunctionDef) -> str:
    return f"tcdoctor_patch::{ops.op_name(spot.site.file, func.name.value, spot.line_of(func))}"


def _title(spot: Spot, func: cst.FunctionDef) -> str:
    return (
        f"wrap the whole helper {func.name.value}() (the break at line {spot.site.line}) in the "
        f"custom op {_qualname(spot, func)}"
    )


def observe(spot: Spot) -> Need | None:
    """The helper's whole call: its arguments when it is called, and what it returns."""
    helper = candidate(spot)
    if not isinstance(helper, _Helper):
        return None
    func = helper.func
    return Need(
        spot.line_of(func),
        func.name.value,
        tuple(helper.params),
        "",
        CODE,
        _title(spot, func),
        whole=True,
    )


def match(spot: Spot, observed: dict | None) -> Result | None:
    helper = candidate(spot)
    if helper is None or isinstance(helper, NoRewrite):
        return helper
    if not observed:
        return NoRewrite("needs the eager run's shapes", NAME)
    return _write(spot, helper, observed)


# ---------------------------------------------------------------------------------------------
# writing the op


def _checked_types(
    helper: _Helper, observed: dict
) -> tuple[dict[str, str], str | None] | NoRewrite:
    """Each parameter's type from the observed call, and the fake's dtype (None: the array
    input's), or why the observed call does not fit the helper's rule."""
    seen, out = observed.get("inputs") or {}, observed.get("output") or {}
    if out.get("type") != "tensor" or not ops.known_dtype(out):
        return NoRewrite(
            f"the helper returned {out.get('type') or 'an unobserved value'} with no torch "
            "dtype: a custom op returns a tensor",
            NAME,
        )
    types = ops.param_types(helper.params, seen, NAME)
    if isinstance(types, NoRewrite):
        return types
    x, result = helper.result.source, helper.result
    if types.get(x) != "torch.Tensor":
        return NoRewrite(f"{x}, read as the library's array, is not a tensor", NAME)
    derived = result.shape.of([int(d) for d in seen[x].get("shape", ())])
    got = [int(d) for d in out.get("shape", ())]
    if derived != got:
        rule = "; ".join(result.rules) or "NumPy conversions: same shape as its input"
        return NoRewrite(
            f"{UNKNOWN}: the shape rule ({rule}) gives {tuple(derived or ())}, but "
            f"{helper.func.name.value}() returned {tuple(got)}",
            NAME,
        )
    if result.dtype is not None:
        if ops.dtype(out) != f"torch.{result.dtype}":
            return NoRewrite(
                f"the helper fixes the dtype {result.dtype}, but returned {out.get('dtype')}",
                NAME,
            )
        return types, f"torch.{result.dtype}"
    follows = result.keeps and ops.dtype(out) == ops.dtype(seen[x])
    return types, None if follows else ops.dtype(out)


def _annotated(
    spot: Spot, func: cst.FunctionDef, types: dict[str, str]
) -> cst.FunctionDef | NoRewrite:
    """The def with every parameter annotated with its observed type and `-> torch.Tensor`; an
    annotation already written must name that type."""

    def annotation(node: cst.Annotation | None, want: str, what: str) -> cst.Annotation | NoRewrite:
        if node is None:
            return cst.Annotation(cst.parse_expression(want))
        have = tree.resolve(spot, node.annotation) if tree.dotted(node.annotation) else None
        if have != want:
            return NoRewrite(
                f"{what} is annotated `{spot.code(node.annotation)}`: a custom op's is "
                f"`{want}` (as observed)",
                NAME,
            )
        return node

    params = []
    for param in [*func.params.posonly_params, *func.params.params, *func.params.kwonly_params]:
        got = annotation(param.annotation, types[param.name.value], param.name.value)
        if isinstance(got, NoRewrite):
            return got
        spaced = cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(" "), whitespace_after=cst.SimpleWhitespace(" ")
        )  # PEP 8: `sigma: float = 2.0` once annotated
        equal = spaced if param.default is not None else param.equal
        params.append(param.with_changes(annotation=got, equal=equal))
    returns = annotation(func.returns, "torch.Tensor", f"{func.name.value}()'s result")
    if isinstance(returns, NoRewrite):
        return returns
    p = func.params
    n1, n2 = len(p.posonly_params), len(p.posonly_params) + len(p.params)
    new_params = p.with_changes(
        posonly_params=params[:n1], params=params[n1:n2], kwonly_params=params[n2:]
    )
    return func.with_changes(params=new_params, returns=returns)


def _plain(params: cst.Parameters) -> cst.Parameters:
    """The parameters as the fake takes them: the op's own, defaults kept (the op hands its
    fake the arguments as called), annotations dropped."""
    bare = cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )

    def one(p: cst.Param) -> cst.Param:
        return p.with_changes(annotation=None, equal=bare if p.default is not None else p.equal)

    return params.with_changes(
        posonly_params=[one(p) for p in params.posonly_params],
        params=[one(p) for p in params.params],
        kwonly_params=[one(p) for p in params.kwonly_params],
    )


def _registrations(func: cst.FunctionDef, n: int, fake: str) -> list[cst.BaseStatement]:
    """The fake, and the autograd registration that marks the output non-differentiable."""
    name = func.name.value
    nones = "(" + ", ".join(["None"] * n) + ("," if n == 1 else "") + ")"
    text = (
        f"@{name}.register_fake\n"
        f"def _tcd_{name}_fake():\n"
        f"    return {fake}\n"
        "\n"
        "\n"
        f"def _tcd_{name}_no_grad(ctx, inputs, output):\n"
        f"    ctx.mark_non_differentiable(output)  # no gradient through {name}(), as before\n"
        "\n"
        "\n"
        f"{name}.register_autograd(lambda ctx, grad: {nones}, setup_context=_tcd_{name}_no_grad)\n"
    )
    defs = list(cst.parse_module(text).body)
    defs[0] = defs[0].with_changes(params=_plain(func.params))  # type: ignore[call-arg]
    return [d.with_changes(leading_lines=[BLANK, BLANK]) for d in defs]


def _write(spot: Spot, helper: _Helper, observed: dict) -> Result:
    checked = _checked_types(helper, observed)
    if isinstance(checked, NoRewrite):
        return checked
    types, fixed = checked
    func, result, name = helper.func, helper.result, helper.func.name.value
    annotated = _annotated(spot, func, types)
    if isinstance(annotated, NoRewrite):
        return annotated
    qualname = _qualname(spot, func)
    decorator = cst.Decorator(
        cst.parse_expression(f'torch.library.custom_op("{qualname}", mutates_args=())')
    )
    fake = ops.fake(result.shape, result.source, fixed, result.device == "input")
    body = list(spot.module.body)
    at = next(i for i, s in enumerate(body) if s is func)
    body[at] = annotated.with_changes(decorators=[decorator])
    body[at + 1 : at + 1] = _registrations(func, len(helper.params), fake)
    if at + 1 + 3 < len(body):
        body[at + 4] = tree.two_blank(body[at + 4])
    module = tree.ensure_torch(spot.module.with_changes(body=body))
    rule = "; ".join(result.rules) or "NumPy conversions: same shape as its input"
    x = result.source
    note = (
        f"the whole helper {name}() runs as one op, opaque to the compiler; its output is marked "
        f"non-differentiable, as the original's NumPy-made output was; fake: shape by the rule "
        f"{rule}, "
        + (f"dtype {fixed}" if fixed else f"dtype {x}'s")
        + (f", device {x}'s" if result.device == "input" else ", on the CPU")
    )
    return Rewrite(
        rule=CODE,
        family=NAME,
        safety=Safety.UNSAFE,
        title=_title(spot, func),
        note=note,
        source=module.code,
        line=spot.site.line,
        proofs=(PROOF,),
        payload=OpPayload(qualname, name, tuple(helper.params), rule),
    )


PAGE = Page(
    rewrites=(
        "a module-level helper that calls a library on a tensor's data (`x.detach().cpu()."
        "numpy()`), tidies the result with NumPy (`np.ascontiguousarray`, `np.asarray(y, "
        "dtype=...)`, `.astype`) and returns `torch.from_numpy(...)` (`.to(x.device)`) becomes a "
        "`torch.library.custom_op`, decorated in place: its parameters annotated from the eager "
        "call, a fake from the library function's shape rule and the dtype the chain fixes, and "
        "its output marked non-differentiable (as the original's NumPy-made output is)"
    ),
    refuses=(
        "where TCD105 wraps the line alone (it does); a helper with a branch, a loop or an array "
        "read off its chain (`y.max()`), a method or nested function, a decorator, *args or "
        "**kwargs, a default that is not a literal, an annotation other than the observed type, "
        "a function with no shape rule, or two reductions"
    ),
    proof=(
        "torch.library.opcheck on the arguments the helper got in the workload's call and every "
        "input variant, the op against the original helper on each of them (outputs and "
        "requires_grad, the inputs requiring grad), the model's parameter gradients patched vs "
        "original, and the patched copy compiled (aot_eager) on every variant, plus the breaks, "
        "eager outputs and compiled numerics"
    ),
    example=(
        "import numpy as np\nimport scipy.ndimage\nimport torch\n\n\n"
        "def smooth(x, sigma=2.0):\n"
        "    y = scipy.ndimage.gaussian_filter1d(x.detach().cpu().numpy(), sigma=sigma, axis=-1)\n"
        "    y = np.ascontiguousarray(y)\n"
        "    return torch.from_numpy(np.asarray(y, dtype=np.float32)).to(x.device)\n"
    ),
    example_line=7,
    example_gb_type="Unsupported ndarray attribute access",
    example_observed={
        "inputs": {
            "x": {"type": "tensor", "shape": [8, 64], "dtype": "float32"},
            "sigma": {"type": "float"},
        },
        "output": {"type": "tensor", "shape": [8, 64], "dtype": "float32"},
    },
)

RULE = Rule(
    code=CODE,
    name=NAME,
    safety=Safety.UNSAFE,
    the_break=(
        "a helper that calls a library on a tensor's data and converts the result back with "
        "NumPy (`np.ascontiguousarray`, `np.asarray(y, dtype=...)`, then `torch.from_numpy`), "
        "which TCD105 refuses line by line"
    ),
    the_rewrite=(
        "the whole helper a `torch.library.custom_op` (decorated in place), its fake from the "
        "shape rule and the dtype the chain fixes, its output non-differentiable as before"
    ),
    statements=(cst.SimpleStatementLine,),
    proofs=(PROOF,),
    match=match,
    page=PAGE,
    library_calls=True,
    observe=observe,
    checked=(
        "`torch.library.opcheck` on every call observed, the op against the original helper "
        "(outputs, `requires_grad`), parameter gradients, and the compiled copy on every input "
        "variant"
    ),
    safety_note="the op is opaque to the compiler, and its fake must hold for every input",
)
