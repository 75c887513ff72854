"""TCD105 custom-op: the user's call into another library on tensor data (scipy, numpy, any
module outside torch) wrapped in a `torch.library.custom_op`, at the user's own line.

Applies to an assignment whose value calls a function of a module imported at the top of the file
that is not torch, handing it a tensor's data through `.numpy()` (after `.detach()`, `.cpu()`):
where PyTorch reports the break at the line itself, and where the break lies inside the library,
reached from that line (Dynamo traces NumPy into scipy and breaks in `correlate1d`; the line is
still the one to wrap). Two forms:
- the value is the library call converted to a tensor (`torch.from_numpy(f(x.numpy()))`,
  `torch.as_tensor(f(x.detach().cpu().numpy()), device=x.device)`): the op returns the value;
- the value is the library call itself and every later read of the name converts it
  (`y = f(...)` ... `torch.as_tensor(y, device=x.device)`, `torch.from_numpy(y)`): the op returns
  `torch.as_tensor(f(...))` (on the CPU), `torch.from_numpy(y)` becomes `y`.

The fake implementation must give the output's shape, dtype and device for every input, not only
the one observed: the shape comes from the function's shape rule (op_shapes.py: same shape, or a
reduction over a literal axis), checked against the eager call observed (`observe`); the dtype
follows the input when the call kept it, else is the observed one; the device follows the input
where the value puts it there (`device=x.device`, or no `.cpu()` on the way), else is the CPU. A
function with no shape rule, or a result changed before it is returned (sliced, reshaped), is
refused: "output shape unknown off the observed call".

Pitfalls:
- A custom op whose inputs require grad raises in backward (no autograd formula), where the
  original's `.detach().numpy()` just stopped the gradient: a tensor input the expression only
  reads through `.detach()`, `.numpy()` or its metadata (`.device`, `.dtype`, `.shape`) is passed
  as `x.detach()`, so training behaves as before and opcheck runs on detached inputs.
- Dynamo traces many numpy calls itself (trace_numpy), so the rule applies only where PyTorch
  reported a break at or under the line.
- The op reads only its arguments: a value reading `self` or another attribute is refused (bind
  it to a local first).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ...outcomes import Safety
from . import op_shapes, ops, tree
from .base import Need, NoRewrite, Observed, OpPayload, Page, Proof, Result, Rewrite, Rule, Value
from .tree import BLANK, Spot

CODE, NAME = "TCD105", "custom-op"
META_ATTRS = frozenset({"device", "dtype", "shape", "ndim"})
META_METHODS = frozenset({"size", "dim"})
KEEP_DTYPE = frozenset({"detach", "cpu", "numpy", "contiguous", "clone"})
CHANGE_DTYPE = frozenset({"float", "double", "half", "bfloat16"})
CONVERTERS = ("torch.from_numpy", "torch.as_tensor", "torch.tensor", "torch.asarray")
UNKNOWN = "output shape unknown off the observed call"


@dataclass
class _OpCall:
    """The assignment at the line, the library call in it, and how the op is built."""

    stmt: cst.SimpleStatementLine
    assign: cst.Assign
    library: str
    call: cst.Call
    full: str
    function: str
    target: str
    inputs: list[str]
    detached: set[str]
    array: str  # the tensor input the array argument is read from
    shape: op_shapes.Shape
    returns_array: bool  # the value is the library call itself (an ndarray)
    keeps_dtype: bool
    device: str  # "input": follows the array input; "cpu"
    later: list[cst.Call]  # converters of the name after the line (returns_array)
    names: tuple[str, ...] = ()  # a result unpacked into several names (`vals, vecs = f(...)`)
    shapes: tuple[op_shapes.Shape, ...] = ()  # the rule of each of them


# ---------------------------------------------------------------------------------------------
# matching


def _library_call(spot: Spot, value: cst.BaseExpression) -> tuple[cst.Call, str] | None:
    """The outermost call in `value` of a function of a module imported at the top of the file
    that is not torch: (the call, the dotted name it resolves to)."""
    top = tree.top_level_imports(spot.module)
    for call in tree.calls(value):
        name = tree.dotted(call.func)
        if name is None:
            continue
        head = name.split(".")[0]
        full = tree.resolve(spot, call.func)
        if head in top and full and not tree.is_torch(full) and "." in full:
            return call, full
    return None


def candidate(spot: Spot) -> _OpCall | NoRewrite | None:
    """An assignment calling another library (None: not this rule's statement)."""
    stmt = spot.stmt
    assert isinstance(stmt, cst.SimpleStatementLine)
    assigns = [s for s in stmt.body if isinstance(s, cst.Assign)]
    found = next((f for a in assigns if (f := _library_call(spot, a.value))), None)
    if found is None:
        return None
    call, full = found
    if not any(tree.method_calls(a.value, "numpy") for a in call.args):
        return None  # no tensor data handed over as an array: nothing a custom op would wrap
    library = full.split(".")[0]
    if len(stmt.body) > 1:
        return NoRewrite(
            f"line {spot.site.line} holds several statements (`{spot.code(stmt)[:60]}`): "
            "put the one that breaks on its own line first",
            NAME,
        )
    assign = assigns[0]
    line = spot.site.line
    unpacked = _unpacked(assign, call, full)
    if unpacked:
        funcs = spot.funcs()
        if not funcs:
            return NoRewrite(f"the {library} call at line {line} is not inside a function", NAME)
        return _inputs(spot, stmt, assign, call, full, funcs, unpacked)
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        what = spot.code(assign.targets[0].target)
        return NoRewrite(
            f"the {library} call's result at line {line} goes to `{what}`: bind it to one local "
            "name first",
            NAME,
        )
    funcs = spot.funcs()
    if not funcs:
        return NoRewrite(f"the {library} call at line {line} is not inside a function", NAME)
    return _inputs(spot, stmt, assign, call, full, funcs)


def _unpacked(assign: cst.Assign, call: cst.Call, full: str) -> tuple[str, ...]:
    """The names a call returning a tuple is unpacked into (`vals, vecs = f(...)`), when the call
    is the whole value and the function has a rule per output; () otherwise."""
    target = assign.targets[0].target if len(assign.targets) == 1 else None
    if not isinstance(target, (cst.Tuple, cst.List)) or assign.value is not call:
        return ()
    names = [e.value for e in target.elements]
    if not all(isinstance(n, cst.Name) for n in names) or full not in op_shapes.TUPLES:
        return ()
    return tuple(n.value for n in names)  # type: ignore[attr-defined]


def _inputs(
    spot: Spot,
    stmt: cst.SimpleStatementLine,
    assign: cst.Assign,
    call: cst.Call,
    full: str,
    funcs: list[cst.FunctionDef],
    unpacked: tuple[str, ...] = (),
) -> _OpCall | NoRewrite:
    line, library = spot.site.line, full.split(".")[0]
    imported = set(spot.imports)
    local = set().union(*(tree.bound(spot, f) for f in funcs)) - imported
    inputs = [n for n in tree.reads(assign.value) if n in local]
    if "self" in inputs:
        return NoRewrite(
            f"the {library} call at line {line} reads self: a custom op takes tensors and numbers; "
            "bind what it needs to locals first",
            NAME,
        )
    attrs = [
        a
        for a in tree.attribute_reads(assign.value)
        if a.value.value in inputs and a.attr.value not in META_ATTRS  # type: ignore[attr-defined]
    ]
    if attrs:
        return NoRewrite(
            f"the {library} call at line {line} reads `{spot.code(attrs[0])}`: a custom op takes "
            "tensors and numbers; bind the attribute to a local first",
            NAME,
        )
    detached = {n for n in inputs if _only_detached(assign.value, n)}
    shapes: tuple[op_shapes.Shape, ...] | str = ()
    if unpacked:
        target = ", ".join(unpacked)
        shapes = op_shapes.shapes_of(full, call)
        shape: op_shapes.Shape | str = shapes[0] if not isinstance(shapes, str) else shapes
    else:
        target = assign.targets[0].target.value  # type: ignore[attr-defined]
        shape = op_shapes.shape_of(full, call)
    if isinstance(shape, str) or isinstance(shapes, str):
        return NoRewrite(f"{UNKNOWN}: {shape} (the call at line {line})", NAME)
    array = _array_input(call, inputs)
    if isinstance(array, NoRewrite):
        return array
    name, keeps = array
    if unpacked:
        later: list[cst.Call] = []
        for n in unpacked:
            got = _later_converters(spot, assign, n, funcs[0])
            if isinstance(got, NoRewrite):
                return got
            later += got
        form: tuple | NoRewrite = (True, True, "cpu", later)
    else:
        form = _form(spot, assign, call, target, name, funcs[0])
    if isinstance(form, NoRewrite):
        return form
    returns_array, keeps_wrap, device, later = form
    return _OpCall(
        stmt,
        assign,
        library,
        call,
        full,
        funcs[0].name.value,
        target,
        inputs,
        detached,
        name,
        shape,
        returns_array,
        keeps and keeps_wrap,
        device,
        later,
        unpacked,
        shapes,  # type: ignore[arg-type]
    )


def _only_detached(value: cst.BaseExpression, name: str) -> bool:
    """Whether every read of `name` is `name.detach()`, `name.numpy()` or its metadata: no
    gradient flows from it."""
    uses = [n for n in tree.walk(value) if isinstance(n, cst.Name) and n.value == name]
    safe = [
        c.func.value
        for c in tree.calls(value)
        if isinstance(c.func, cst.Attribute)
        and c.func.attr.value in ("detach", "numpy", *META_METHODS)
        and isinstance(c.func.value, cst.Name)
        and c.func.value.value == name
    ]
    meta = [
        n
        for n in tree.walk(value)
        if isinstance(n, cst.Attribute)
        and isinstance(n.value, cst.Name)
        and n.value.value == name
        and n.attr.value in META_ATTRS
    ]
    return bool(uses) and len(safe) + len(meta) == len(uses)


def _array_input(call: cst.Call, inputs: list[str]) -> tuple[str, bool] | NoRewrite:
    """The tensor input the library call's array argument is read from (`x` in
    `f(x.detach().cpu().numpy())`), and whether the reading keeps its dtype."""
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    node = positional[0] if positional else None
    keeps = True
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not node.args:
        method = node.func.attr.value
        if method not in KEEP_DTYPE | CHANGE_DTYPE:
            break
        keeps = keeps and method in KEEP_DTYPE
        node = node.func.value
    if isinstance(node, cst.Name) and node.value in inputs:
        return node.value, keeps
    return NoRewrite(
        f"{UNKNOWN}: the library call's array argument is not a tensor read through .detach(), "
        ".cpu() and .numpy()",
        NAME,
    )


def _form(
    spot: Spot,
    assign: cst.Assign,
    call: cst.Call,
    target: str,
    array: str,
    func: cst.FunctionDef,
) -> tuple[bool, bool, str, list[cst.Call]] | NoRewrite:
    """(the value is the library call itself, the wrappers keep the dtype, the device the output
    lands on, the converters of the name after the line)."""
    has_cpu = any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value == "cpu" for c in tree.calls(call)
    )
    if assign.value is call:
        later = _later_converters(spot, assign, target, func)
        if isinstance(later, NoRewrite):
            return later
        return True, True, "cpu", later
    node: cst.BaseExpression = assign.value
    device: str | None = None
    keeps = True
    while node is not call:
        if not isinstance(node, cst.Call):
            return _changed(spot, call)
        full = tree.resolve(spot, node.func) if tree.dotted(node.func) else None
        if full in CONVERTERS and node.args and node.args[0].keyword is None:
            for arg in node.args[1:]:
                key = arg.keyword.value if arg.keyword is not None else None
                if key == "device":
                    device = _device(spot, arg.value, array) or "other"
                elif key == "dtype":
                    keeps = False
                else:
                    return _changed(spot, call)
            node = node.args[0].value
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in (
            "to",
            *KEEP_DTYPE,
            *CHANGE_DTYPE,
        ):
            method = node.func.attr.value
            if method == "to":
                if len(node.args) != 1:
                    return _changed(spot, call)
                device = _device(spot, node.args[0].value, array) or "other"
            keeps = keeps and method not in CHANGE_DTYPE
            node = node.func.value
        else:
            return _changed(spot, call)
    if device == "other":
        return NoRewrite(
            f"the result at line {spot.site.line} is moved to a device other than "
            f"{array}'s: the fake cannot tell where it lands",
            NAME,
        )
    if device is None:
        device = "cpu" if has_cpu else "input"
    return False, keeps, device, []


def _device(spot: Spot, node: cst.BaseExpression, array: str) -> str | None:
    """The device `node` names: "input" for `<array>.device`, None for anything else."""
    if isinstance(node, cst.Attribute) and node.attr.value == "device":
        if isinstance(node.value, cst.Name) and node.value.value == array:
            return "input"
    return None


def _changed(spot: Spot, call: cst.Call) -> NoRewrite:
    return NoRewrite(
        f"{UNKNOWN}: the result of `{spot.code(call.func)}` at line {spot.site.line} is changed "
        "before it is returned (only torch.from_numpy / torch.as_tensor / .to() around it keep "
        "its shape rule)",
        NAME,
    )


def _later_converters(
    spot: Spot, assign: cst.Assign, target: str, func: cst.FunctionDef
) -> list[cst.Call] | NoRewrite:
    """Every read of `target` after the line, each the first argument of a converter."""
    line, end = spot.line_of(spot.stmt), spot.pos[spot.stmt].end.line
    converters: list[cst.Call] = []
    covered: set[int] = set()
    for call in tree.calls(func.body):
        if spot.line_of(call) <= end or not call.args or call.args[0].keyword is not None:
            continue
        first = call.args[0].value
        full = tree.resolve(spot, call.func) if tree.dotted(call.func) else None
        if full in CONVERTERS and isinstance(first, cst.Name) and first.value == target:
            if full == "torch.tensor" and any(
                a.keyword is None or a.keyword.value not in ("dtype", "device")
                for a in call.args[1:]
            ):
                continue
            converters.append(call)
            covered.add(id(first))
    for node in tree.walk(func.body):
        if isinstance(node, cst.Name) and node.value == target and node in spot.pos:
            if spot.line_of(node) > end and id(node) not in covered and not _is_target(spot, node):
                return NoRewrite(
                    f"the array `{target}` from the call at line {line} is used as an array at "
                    f"line {spot.line_of(node)}: a custom op returns a tensor; convert it with "
                    "torch.as_tensor right after the call",
                    NAME,
                )
    if not converters:
        return NoRewrite(
            f"the array `{target}` from the call at line {line} is never converted to a tensor: "
            "a custom op returns tensors",
            NAME,
        )
    return converters


def _is_target(spot: Spot, name: cst.Name) -> bool:
    parent = spot.parents.get(name)
    return isinstance(parent, cst.AssignTarget)


def match(spot: Spot, observed: Observed | None) -> Result | None:
    op = candidate(spot)
    if op is None or isinstance(op, NoRewrite):
        return op
    if not observed:
        return NoRewrite("needs the eager run's shapes", NAME, pending=True)
    return _custom_op(spot, op, observed)


def observe(spot: Spot) -> Need | None:
    """What the eager run must record: the inputs and the result of the line."""
    op = candidate(spot)
    if not isinstance(op, _OpCall):
        return None
    line = spot.line_of(op.stmt)
    return Need(line, op.function, tuple(op.inputs), op.target, CODE, _title(spot, op, line))


def _title(spot: Spot, op: _OpCall, line: int) -> str:
    qualname = f"tcdoctor_patch::{ops.op_name(spot.site.file, op.function, line)}"
    return f"wrap the {op.library} call at line {line} in the custom op {qualname}"


# ---------------------------------------------------------------------------------------------
# writing the op


def _shape_checks(
    spot: Spot, op: _OpCall, outs: list[Value], seen: dict[str, Value]
) -> NoRewrite | None:
    """Each output's observed shape against its rule (None: every one agrees)."""
    for shape, out in zip(op.shapes or (op.shape,), outs):
        derived = shape.of([int(d) for d in seen[op.array].shape])
        got = [int(d) for d in out.shape]
        if derived != got:
            return NoRewrite(
                f"{UNKNOWN}: the shape rule ({shape.describe(op.full)}) gives "
                f"{tuple(derived or ())}, but the call at line {spot.site.line} produced "
                f"{tuple(got)}",
                NAME,
            )
    return None


def _custom_op(spot: Spot, op: _OpCall, observed: Observed) -> Result:
    types = _observed_types(op, observed)
    if isinstance(types, NoRewrite):
        return types
    out, seen = observed.output, observed.inputs
    outs = out.items if op.names else [out]
    wrong = _shape_checks(spot, op, outs, seen)
    if wrong is not None:
        return wrong
    rule = "; ".join(s.describe(op.full) for s in (op.shapes or (op.shape,)))
    line = spot.line_of(op.stmt)
    fn = f"_tcd_op_l{line}"
    qualname = f"tcdoctor_patch::{ops.op_name(spot.site.file, op.function, line)}"
    fakes, follows = [], True
    for shape, o in zip(op.shapes or (op.shape,), outs):
        same = op.keeps_dtype and ops.dtype(o) == ops.dtype(seen[op.array])
        follows = follows and same
        fakes.append(
            ops.fake(shape, op.array, None if same else ops.dtype(o), op.device == "input")
        )
    fake = f"({', '.join(fakes)})" if op.names else fakes[0]
    defs = _op_defs(fn, qualname, op, types, fake)
    args = [f"{n}.detach()" if n in op.detached else n for n in op.inputs]
    new: dict[cst.CSTNode, cst.BaseExpression] = {
        op.assign.value: cst.parse_expression(f"{fn}({', '.join(args)})")
    }
    for conv in op.later:
        if (tree.resolve(spot, conv.func) or "") == "torch.from_numpy":
            new[conv] = cst.Name(conv.args[0].value.value)  # type: ignore[attr-defined]
        elif (tree.resolve(spot, conv.func) or "") == "torch.tensor":
            new[conv] = cst.parse_expression(
                spot.code(conv).replace(spot.code(conv.func), "torch.as_tensor", 1) + ".clone()"
            )
    module = spot.module.visit(tree.ReplaceNodes(new))
    module = tree.insert_top(tree.ensure_torch(module), defs)
    note = "no gradient flows through the op; a gradient through it needs register_autograd"
    if op.detached:
        detached = ", ".join(f"{n}.detach()" for n in op.inputs if n in op.detached)
        note = f"no gradient flows through the op, as in the original (the call passes {detached})"
    note += f"; fake: shape by the rule {rule}"
    note += (
        (f", dtype {op.array}'s" if follows else f", dtype {ops.dtype(out)} as observed")
        + (f", device {op.array}'s" if op.device == "input" else ", on the CPU")
        if not op.names
        else (f", dtype {op.array}'s" if follows else ", dtypes as observed")
    )
    if op.names:
        note += (
            f"; the op returns a tuple of tensors, unpacked into `{op.target}` as the call's "
            "arrays were, so each is a tensor"
        )
    elif op.returns_array:
        note += f"; the op returns a tensor where the call returned an array, so `{op.target}` is a tensor"
    return Rewrite(
        rule=CODE,
        family=NAME,
        safety=Safety.UNSAFE,
        title=_title(spot, op, line),
        note=note,
        source=module.code,
        line=spot.site.line,
        proofs=(Proof.OPCHECK,),
        payload=OpPayload(qualname, fn, tuple(op.inputs), rule),
    )


def _observed_types(op: _OpCall, observed: Observed) -> dict[str, str] | NoRewrite:
    """Each input's annotation (`torch.Tensor`, `int`, ...) from the observed eager run."""
    seen, out = observed.inputs, observed.output
    want = "ndarray" if op.returns_array else "tensor"
    if op.names:
        items = out.items if out.type == "tuple" else []
        if len(items) != len(op.names):
            return NoRewrite(
                f"the call returns {out.type or 'an unobserved value'}, not a tuple of "
                f"{len(op.names)} arrays",
                NAME,
            )
        bad = [i for i in items if i.type != want or not ops.known_dtype(i)]
        out = bad[0] if bad else items[0]
    if out.type != want:
        return NoRewrite(
            f"the call returns {out.type or 'an unobserved value'}, not a {want}: a "
            "custom op must return tensors (convert the result with torch.from_numpy in the "
            "source first)",
            NAME,
        )
    if not ops.known_dtype(out):
        return NoRewrite("the output's observed dtype is not a torch dtype name", NAME)
    types = ops.param_types(op.inputs, seen, NAME)
    if isinstance(types, NoRewrite):
        return types
    if types.get(op.array) != "torch.Tensor":
        return NoRewrite(f"{op.array}, read as the library's array, is not a tensor", NAME)
    return types


def _op_defs(
    fn: str, qualname: str, op: _OpCall, types: dict[str, str], fake: str
) -> list[cst.BaseStatement]:
    params = ", ".join(f"{n}: {types[n]}" for n in op.inputs)
    body = "torch.as_tensor(__tcd_expr__)" if op.returns_array else "__tcd_expr__"
    returns = "torch.Tensor"
    if op.names:
        body = "tuple(torch.as_tensor(a).contiguous() for a in __tcd_expr__)"  # LAPACK: F-order
        returns = f"tuple[{', '.join(['torch.Tensor'] * len(op.names))}]"
    text = (
        f'@torch.library.custom_op("{qualname}", mutates_args=())\n'
        f"def {fn}({params}) -> {returns}:\n"
        f"    return {body}\n"
        "\n"
        "\n"
        f"@{fn}.register_fake\n"
        f"def _({', '.join(op.inputs)}):\n"
        f"    return {fake}\n"
    )
    defs = list(cst.parse_module(text).body)
    defs[0] = defs[0].visit(tree.Substitute("__tcd_expr__", op.assign.value))  # type: ignore[assignment]
    return [d.with_changes(leading_lines=[BLANK, BLANK]) for d in defs]


PAGE = Page(
    rewrites=(
        "an assignment whose value calls another library on tensor data (scipy, numpy, any "
        "module outside torch) becomes a call of a `torch.library.custom_op` defined at the top "
        "of the file; its fake implementation follows the function's shape rule (same shape, or "
        "a reduction over a literal axis). Also where the break lies inside the library, reached "
        "from the line. `y = f(x.detach().cpu().numpy())` ... `torch.as_tensor(y, "
        "device=x.device)` is handled: the op returns a CPU tensor"
    ),
    refuses=(
        f"a function with no shape rule, or a result changed before it is returned ({UNKNOWN}); "
        "a value that reads self or another attribute; an array used as an array later; a "
        "result that is not a tensor or an array; a device other than the input's"
    ),
    proof=(
        "torch.library.opcheck on the inputs the line saw in the workload's call and in every "
        "input variant, and the patched copy compiled (backend aot_eager) against its eager "
        "outputs on every variant, plus the breaks, eager outputs and compiled numerics"
    ),
    example=(
        "import scipy.ndimage\nimport torch\n\n\ndef smooth(x):\n"
        "    y = scipy.ndimage.gaussian_filter1d(x.detach().cpu().numpy(), sigma=2.0, axis=-1)\n"
        "    return torch.as_tensor(y, device=x.device) + x\n"
    ),
    example_line=6,
    example_gb_type="Unsupported ndarray attribute access",
    example_observed={
        "inputs": {"x": {"type": "tensor", "shape": [8, 64], "dtype": "float32"}},
        "output": {"type": "ndarray", "shape": [8, 64], "dtype": "float32"},
    },
)

RULE = Rule(
    code=CODE,
    name=NAME,
    safety=Safety.UNSAFE,
    the_break=(
        "a call into a non-PyTorch library on tensor data (`scipy.special.expit(h.numpy())`), "
        "or a break inside that library reached from your line"
    ),
    the_rewrite=(
        "a `torch.library.custom_op` whose fake follows the function's shape rule (same shape, "
        "or a reduction over a literal axis)"
    ),
    statements=(cst.SimpleStatementLine,),
    proofs=(Proof.OPCHECK,),
    match=match,
    page=PAGE,
    library_calls=True,
    observe=observe,
    checked=(
        "`torch.library.opcheck` on the inputs the line saw on the workload's call and every "
        "input variant, and the patched copy compiled (`aot_eager`) on every variant"
    ),
)
