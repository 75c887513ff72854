"""TCD106 helper-op: a NumPy round-trip helper (tensor in, a library call on its data, NumPy to
tidy the result, tensor out) wrapped whole in a `torch.library.custom_op`.

Applies to a module-level function written as users write such helpers:

    def smooth(x, sigma=2.0):
        y = scipy.ndimage.gaussian_filter1d(x.detach().cpu().numpy(), sigma=sigma, axis=-1)
        y = np.ascontiguousarray(y)
        y = np.asarray(y, dtype=np.float32)
        return torch.from_numpy(y).to(x.device)

and to a method of a module-level class that another method calls (helper_method.py: the op is
module-level, its attributes passed in). TCD105 wraps one line and refuses this one (the array
`y` is used as an array on the next line); yet the helper is tensor in, tensor out. The whole
function becomes the op, read from its contract: the schema from the signature and the eager
call (tensors, Python int/float/bool, a tuple of tensors returned), decorated in place with
`@torch.library.custom_op`, a fake registered from the shape rules, and an autograd
registration that marks each output non-differentiable. How the body is read: helper_read.py.

A helper that writes Python state, or whose output length depends on the data, is refused with
the reason (never an op); TCD107 (helper_disable.py) then stands in with `@torch.compiler.
disable`. The data-dependent case could also be an op whose fake asks
`torch.library.get_ctx().new_dynamic_size()`: measured with PyTorch's counters on
tests/targets/cure/shape_dynamic.py (aot_eager), such an op left 1 break ("Dynamic shape
operator": Dynamo stops at an op with a data-dependent output unless
`capture_dynamic_output_shape_ops` is set) and 2 graphs, the same as disable, which is safe and
keeps the helper's code as written; so disable it is.

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

Pitfalls: only a module-level function (or a method) with no decorator, `*args` or `**kwargs`,
whose defaults are literals and whose name nothing else binds; existing annotations must be the types the
eager call observed. Where TCD105 can wrap the line alone, it does: this rule answers only where
it would not. The dtype is the one the chain fixes (`dtype=np.float32`), else the input's where
the observed call kept it, else the observed one. The op replaces the function for every caller:
a call elsewhere with another kind of argument (a NumPy array) would fail there, and the proof
sees only the workload's calls (hence unsafe).
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from ...outcomes import Safety
from . import custom_op, helper_method, ops, tree
from .base import Need, NoRewrite, Observed, OpPayload, Page, Result, Rewrite, Rule, Value
from .helper_read import Helper, Refuse, read
from .tree import BLANK, Spot

CODE, NAME = "TCD106", "helper-op"
PROOF = "helper-op"  # its own proof: experiments/proving/proofs/helper_op.py
UNKNOWN = custom_op.UNKNOWN
ENTRIES = frozenset({"forward", "__call__", "__init__"})  # the compiled entry: never an op


def _refusal(spot: Spot, func: cst.FunctionDef, method: bool = False) -> NoRewrite | None:
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
    if not method and len(tree.module_binds(spot, name)) != 1:
        return NoRewrite(f"{name} is bound more than once at module level", NAME)
    return None


def _method_of(spot: Spot, func: cst.FunctionDef) -> cst.ClassDef | None:
    """The module-level class `func` is a method of (None: not a method)."""
    block = spot.parents.get(func)
    klass = spot.parents.get(block) if block is not None else None
    if isinstance(klass, cst.ClassDef) and isinstance(spot.parents.get(klass), cst.Module):
        return klass
    return None


def _op_function(spot: Spot, func: cst.FunctionDef, klass: cst.ClassDef) -> str:
    return f"_tcd_{klass.name.value}_{func.name.value.lstrip('_')}"


def _read_method(
    spot: Spot, func: cst.FunctionDef, klass: cst.ClassDef, arrays: set[str]
) -> Helper | NoRewrite | None:
    """A method read as the module-level function its op is (`arrays`: its NumPy attributes)."""
    what = f"{klass.name.value}.{func.name.value}"
    if func.name.value in ENTRIES or not tree.params(func)[:1] == ["self"]:
        return None
    attrs = helper_method.read(spot, func)
    if isinstance(attrs, str):
        return NoRewrite(f"the method {attrs}", NAME)
    as_fn = helper_method.as_function(func, _op_function(spot, func, klass), attrs, arrays)
    try:
        helper = read(spot, as_fn)
    except Refuse as why:
        return NoRewrite(f"the method {what}(): {why}", NAME)
    if helper is None:
        return None
    return replace(helper, method=func, klass=klass, attrs=attrs)


def candidate(spot: Spot, arrays: set[str] | None = None) -> Helper | NoRewrite | None:
    """The helper around the line (None: not this rule's; TCD105's line patch comes first).
    `arrays`: a method's attributes the eager run saw as NumPy arrays."""
    funcs = spot.funcs()
    if len(funcs) != 1 or not isinstance(spot.stmt, cst.SimpleStatementLine):
        return None
    klass = _method_of(spot, funcs[0])
    if klass is None and not isinstance(spot.parents.get(funcs[0]), cst.Module):
        return None
    line_op = custom_op.candidate(spot)
    if line_op is not None and not isinstance(line_op, NoRewrite):
        return None  # TCD105 wraps the line alone
    if klass is not None:
        helper = _read_method(spot, funcs[0], klass, arrays or set())
        if helper is None or isinstance(helper, NoRewrite):
            return helper
        return _refusal(spot, funcs[0], method=True) or helper
    try:
        helper = read(spot, funcs[0])
    except Refuse as why:
        return NoRewrite(f"the helper {funcs[0].name.value}(): {why}", NAME)
    if helper is None:
        return None
    return _refusal(spot, funcs[0]) or helper


def _defined(spot: Spot, helper: Helper) -> cst.FunctionDef:
    """The def the op's name and line come from: the helper's, or the method's."""
    return helper.method if helper.method is not None else helper.func


def _qualname(spot: Spot, helper: Helper) -> str:
    func = _defined(spot, helper)
    name = helper.name.replace(".", "_")
    return f"tcdoctor_patch::{ops.op_name(spot.site.file, name, spot.line_of(func))}"


def _title(spot: Spot, helper: Helper) -> str:
    return (
        f"wrap the whole helper {helper.name}() (the break at line {spot.site.line}) in the "
        f"custom op {_qualname(spot, helper)}"
    )


def observe(spot: Spot) -> Need | None:
    """The helper's whole call: its arguments when it is called (a method's `self` and the
    attributes it reads too), and what it returns."""
    helper = candidate(spot)
    if not isinstance(helper, Helper):
        return None
    func = _defined(spot, helper)
    inputs = [helper.key(p) for p in helper.params]
    if helper.method is not None:
        inputs = ["self", *inputs]
    return Need(
        spot.line_of(func),
        func.name.value,
        tuple(inputs),
        "",
        CODE,
        _title(spot, helper),
        whole=True,
    )


def match(spot: Spot, observed: Observed | None) -> Result | None:
    helper = candidate(spot)
    if helper is None or isinstance(helper, NoRewrite):
        return helper
    if not observed:
        return NoRewrite("needs the eager run's shapes", NAME, pending=True)
    arrays: set[str] = set()
    if helper.method is not None:  # read again, its NumPy attributes known
        seen = observed.inputs
        arrays = {a for a, _ in helper.attrs.names if _kind(seen, f"self.{a}") == "ndarray"}
        helper = candidate(spot, arrays)
        if not isinstance(helper, Helper):
            why = "the method reads differently once its attributes' kinds are known"
            return helper or NoRewrite(why, NAME)
    return _write(spot, helper, observed, arrays)


def _kind(seen: dict[str, Value], key: str) -> str | None:
    return seen.get(key, Value()).type


# ---------------------------------------------------------------------------------------------
# writing the op


def _outputs(observed: Observed, n: int, several: bool) -> list[Value] | NoRewrite:
    """The observed output of each returned value."""
    out = observed.output
    if several:
        items = out.items if out.type == "tuple" else []
        if len(items) != n:
            return NoRewrite(
                f"the helper returned {out.type or 'an unobserved value'}, not a tuple of "
                f"{n} tensors",
                NAME,
            )
    else:
        items = [out]
    for item in items:
        if item.type != "tensor" or not ops.known_dtype(item):
            return NoRewrite(
                f"the helper returned {item.type or 'an unobserved value'} with no torch "
                "dtype: a custom op returns a tensor",
                NAME,
            )
    return items


def _seen(helper: Helper, observed: Observed) -> dict[str, Value]:
    """The observed inputs by the op's parameter names, a NumPy attribute seen as the tensor it
    is passed as."""
    seen = {}
    for p in helper.params:
        got = observed.inputs.get(helper.key(p), Value())
        seen[p] = replace(got, type="tensor") if got.type == "ndarray" else got
    return seen


def _checked_types(
    helper: Helper, observed: Observed
) -> tuple[dict[str, str], list[str | None]] | NoRewrite:
    """Each parameter's type from the observed call, and each output's fake dtype (None: its
    array input's), or why the observed call does not fit the helper's rule."""
    outs = _outputs(observed, len(helper.results), helper.several)
    if isinstance(outs, NoRewrite):
        return outs
    seen = _seen(helper, observed)
    types = ops.param_types(helper.params, seen, NAME)
    if isinstance(types, NoRewrite):
        return types
    fixed: list[str | None] = []
    for result, out in zip(helper.results, outs):
        x = result.source
        if types.get(x) != "torch.Tensor":
            return NoRewrite(f"{x}, read as the library's array, is not a tensor", NAME)
        derived = result.shape.of([int(d) for d in seen[x].shape])
        for other in result.broadcast:
            derived = ops.broadcast(derived, [int(d) for d in seen[other].shape])
        got = [int(d) for d in out.shape]
        if derived != got:
            rule = "; ".join(result.rules) or "NumPy conversions: same shape as its input"
            return NoRewrite(
                f"{UNKNOWN}: the shape rule ({rule}) gives {tuple(derived or ())}, but "
                f"{helper.name}() returned {tuple(got)}",
                NAME,
            )
        if result.dtype is not None:
            if ops.dtype(out) != f"torch.{result.dtype}":
                return NoRewrite(
                    f"the helper fixes the dtype {result.dtype}, but returned {out.dtype}",
                    NAME,
                )
            fixed.append(f"torch.{result.dtype}")
            continue
        follows = result.keeps and ops.dtype(out) == ops.dtype(seen[x])
        fixed.append(None if follows else ops.dtype(out))
    return types, fixed


def _annotated(
    spot: Spot, func: cst.FunctionDef, types: dict[str, str], returns_type: str
) -> cst.FunctionDef | NoRewrite:
    """The def with every parameter annotated with its observed type and `-> torch.Tensor`; an
    annotation already written must name that type."""

    def annotation(node: cst.Annotation | None, want: str, what: str) -> cst.Annotation | NoRewrite:
        if node is None:
            return cst.Annotation(cst.parse_expression(want))
        have = tree.resolve(spot, node.annotation) if tree.dotted(node.annotation) else None
        if have != want and spot.code(node.annotation).replace(" ", "") != want.replace(" ", ""):
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
    returns = annotation(func.returns, returns_type, f"{func.name.value}()'s result")
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


def _registrations(
    func: cst.FunctionDef, n: int, fake: str, several: bool, shown: str
) -> list[cst.BaseStatement]:
    """The fake, and the autograd registration that marks the output (each output of a tuple)
    non-differentiable (`shown`: the helper as its callers name it)."""
    name = func.name.value
    base = name.removeprefix("_tcd_")
    nones = "(" + ", ".join(["None"] * n) + ("," if n == 1 else "") + ")"
    outputs, grads = ("*output", "*grads") if several else ("output", "grad")
    text = (
        f"@{name}.register_fake\n"
        f"def _tcd_{base}_fake():\n"
        f"    return {fake}\n"
        "\n"
        "\n"
        f"def _tcd_{base}_no_grad(ctx, inputs, output):\n"
        f"    ctx.mark_non_differentiable({outputs})  # no gradient through {shown}(), as before\n"
        "\n"
        "\n"
        f"{name}.register_autograd(lambda ctx, {grads}: {nones}, setup_context=_tcd_{base}_no_grad)\n"
    )
    defs = list(cst.parse_module(text).body)
    defs[0] = defs[0].with_changes(params=_plain(func.params))  # type: ignore[call-arg]
    return [d.with_changes(leading_lines=[BLANK, BLANK]) for d in defs]


def _fakes(helper: Helper, fixed: list[str | None]) -> str:
    """The fake's return expression: one empty tensor per output, a tuple for several."""
    each = [
        ops.fake(r.shape, r.source, f, r.device == "input", r.broadcast)
        for r, f in zip(helper.results, fixed)
    ]
    return f"({', '.join(each)})" if helper.several else each[0]


def _note(helper: Helper, fixed: list[str | None]) -> str:
    parts = []
    for r, f in zip(helper.results, fixed):
        rule = "; ".join(r.rules) or "NumPy conversions: same shape as its input"
        parts.append(
            f"shape by the rule {rule}, "
            + (f"dtype {f}" if f else f"dtype {r.source}'s")
            + (f", device {r.source}'s" if r.device == "input" else ", on the CPU")
        )
    return "; ".join(parts)


def _module(
    spot: Spot, helper: Helper, op: cst.FunctionDef, regs: list, arrays: set[str]
) -> cst.Module:
    """The module with the op in place: the helper decorated where it is, or (a method) the op
    and its registrations before the class and the method calling it."""
    body = list(spot.module.body)
    if helper.method is None:
        at = next(i for i, s in enumerate(body) if s is helper.func)
        body[at] = op
        body[at + 1 : at + 1] = regs
        if at + 1 + len(regs) < len(body):
            body[at + 1 + len(regs)] = tree.two_blank(body[at + 1 + len(regs)])
        return tree.ensure_torch(spot.module.with_changes(body=body))
    assert helper.klass is not None
    at = next(i for i, s in enumerate(body) if s is helper.klass)
    method = helper_method.delegate(helper.method, op.name.value, helper.attrs, arrays)
    klass = helper.klass.visit(tree.ReplaceNodes({helper.method: method}))
    lead = list(helper.klass.leading_lines)
    body[at] = tree.two_blank(klass.with_changes(leading_lines=[]))  # type: ignore[arg-type]
    body[at:at] = [op.with_changes(leading_lines=lead or [BLANK, BLANK]), *regs]
    return tree.ensure_torch(spot.module.with_changes(body=body))


def _write(spot: Spot, helper: Helper, observed: Observed, arrays: set[str]) -> Result:
    checked = _checked_types(helper, observed)
    if isinstance(checked, NoRewrite):
        return checked
    types, fixed = checked
    n = len(helper.results)
    returns = "torch.Tensor" if not helper.several else f"tuple[{', '.join(['torch.Tensor'] * n)}]"
    annotated = _annotated(spot, helper.func, types, returns)
    if isinstance(annotated, NoRewrite):
        return annotated
    qualname = _qualname(spot, helper)
    decorator = cst.Decorator(
        cst.parse_expression(f'torch.library.custom_op("{qualname}", mutates_args=())')
    )
    op = annotated.with_changes(decorators=[decorator])
    fakes = _fakes(helper, fixed)
    regs = _registrations(helper.func, len(helper.params), fakes, helper.several, helper.name)
    module = _module(spot, helper, op, regs, arrays)
    note = (
        f"the whole helper {helper.name}() runs as one op, opaque to the compiler; "
        + ("its outputs are" if helper.several else "its output is")
        + " marked non-differentiable, as the original's NumPy-made output was; fake: "
        + _note(helper, fixed)
    )
    if helper.method is not None:
        note += (
            f"; the method calls the module-level op {helper.func.name.value}(), the attributes "
            f"it reads passed in ({', '.join(helper.attrs.keys) or 'none'})"
        )
    return Rewrite(
        rule=CODE,
        family=NAME,
        safety=Safety.UNSAFE,
        title=_title(spot, helper),
        note=note,
        source=module.code,
        line=spot.site.line,
        proofs=(PROOF,),
        payload=OpPayload(
            qualname,
            helper.func.name.value,
            tuple(helper.params),
            "; ".join(r for v in helper.results for r in v.rules),
            owner=helper.klass.name.value if helper.klass is not None else "",
            method=helper.method.name.value if helper.method is not None else "",
        ),
    )


PAGE = Page(
    rewrites=(
        "a helper (a module-level function, or a method another function calls) that calls a "
        "library on a tensor's data (`x.detach().cpu().numpy()`), tidies the result with NumPy "
        "and returns tensors made from it becomes a `torch.library.custom_op`, read from its "
        "contract. Shapes handled: Python scalar parameters (int, float, bool: the schema from "
        "the signature and the eager call); a tuple of tensors returned (`return a, b`: the "
        "schema returns tuple[Tensor, ...], one fake and one non-differentiable output each); a "
        "method (the op is module-level, the method calls it; each attribute it reads is passed "
        "in: a NumPy attribute as `torch.from_numpy(self.NAME)`, a number or tensor as it is); an "
        "array with a number (`y * strength`, `a ** 2`, `e > t`) or broadcast with another "
        "array input (`y * self.gain`); conversions on the way back (`np.ascontiguousarray`, "
        "`np.asarray(y, dtype=...)`, `.astype`, `.to(x.dtype)`, `.to(x.device)`, "
        "`torch.as_tensor`) read as part of the body. The fake's shape is the input's, a "
        "reduction of it or a broadcast, by each step's shape rule, checked against every call "
        "observed"
    ),
    refuses=(
        "a helper that writes Python state (a list append, a counter, a file, a log record, an "
        "attribute of self: an op's body is opaque and its inputs are copies, so the write would "
        "be lost or skipped); a function whose output length depends on the data "
        "(`np.flatnonzero`, `np.unique`: a fake of one fixed shape would bake the observed length "
        "into the graph); a method calling another method or passing self on; both get TCD107's "
        "`@torch.compiler.disable` where the helper is called in the file. Not this rule's (TCD105 "
        "or TCD107 answer): where TCD105 wraps the line alone; a branch, a loop or an array read "
        "off its chain (`y.max()`); a nested function, `forward`; a decorator, *args or **kwargs, "
        "a default that is not a literal, an annotation other than the observed type, a function "
        "with no shape rule, or two reductions"
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
        "a helper (a function, or a method) that calls a library on a tensor's data and converts "
        "the result back with NumPy (`np.ascontiguousarray`, `np.asarray(y, dtype=...)`, then "
        "`torch.from_numpy`), which TCD105 refuses line by line"
    ),
    the_rewrite=(
        "the whole helper a `torch.library.custom_op` (a function decorated in place; a method's "
        "body a module-level op, its attributes passed in), its schema from the signature and "
        "the call (tensors, int/float/bool, a tuple of tensors returned), its fake from the "
        "shape rules and the dtype the chain fixes, its outputs non-differentiable as before"
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
