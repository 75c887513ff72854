"""TCD104 tensor-cond: an `if` on a tensor value whose branches only assign names becomes
`torch.cond` over two nested functions.

Applies to an `if` whose test reads a tensor (`.item()`, or PyTorch's gb_type of a jump on a
tensor), inside a function, with an optional `else` (no elif), whose branches hold plain
assignments to names (one-line branches too: `if t.item() > 0: y = a`). The branch functions take
the outputs bound before the `if` as operands and return every name either branch assigns.

The predicate keeps the comparison's precision: `t.item() > 0.1` compares as a Python double,
`t > 0.1` in t's dtype (for a float32 `t = torch.tensor(0.1)` the two disagree; for bf16 a band of
about 0.4% around the threshold does), so `.item()` becomes `.double()`, except beside a literal
every float16 and bfloat16 value compares exactly with (`t.item() > 0` becomes `t > 0`). A bare
`if t.item():` tests `t` itself.

Refused, each with its reason: an elif chain, a test combining conditions with and/or, a test
with an effect or a walrus (torch.cond's predicate is traced, not run each call), a branch that
updates in place, returns, raises, calls something with an effect (effects.py, `moved`: code
moved into the branch functions may call torch and its submodules), assigns an attribute or a
subscript, or a name only one branch assigns that is not bound before; and a name a branch passes
through (returned as a clone: torch.cond forbids an output aliasing an input) that is updated in
place after the `if` (`buf = self.buf` ... `buf.add_(1)` would update the clone, not the buffer).

Pitfalls: torch.cond in eager traces its branches with Dynamo, which imports the module by name:
the patched module must be importable as itself (in sys.modules). The proof (patches.py) counts a
branch only when its `if` ran, from the test evaluated in the original's frame, and compares the
predicate, outputs, gradients and buffers on generated inputs and every workload variant.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ...outcomes import Safety
from . import effects, tree
from .base import BranchPayload, NoRewrite, Observed, Page, Proof, Result, Rewrite, Rule
from .tree import BLANK, Spot

CODE, NAME = "TCD104", "tensor-cond"


@dataclass
class _Branch:
    lines: list[cst.SimpleStatementLine]
    names: set[str]
    header: cst.TrailingWhitespace | None
    aliases: frozenset[str] = frozenset()  # names whose last value is another name: `y = x`


def match(spot: Spot, observed: Observed | None) -> Result | None:
    if not tree.tensor_if(spot):
        return None
    stmt = spot.stmt
    assert isinstance(stmt, cst.If)
    smalls, _ = tree.branch_statements(tree.chain_top(spot, stmt))
    if any(isinstance(s, cst.Raise) for s in smalls):
        return NoRewrite(
            f"the if at line {spot.site.line} raises on a tensor value: a data-dependent check "
            "that compiled runs must keep; express it with torch._check by hand"
        )
    return _tensor_cond(spot, stmt)


def _tensor_cond(spot: Spot, stmt: cst.If) -> Result:
    func = spot.func()
    problem = _cond_problem(spot, stmt, func)
    if problem:
        return NoRewrite(problem, NAME)
    true = _branch(spot, stmt.body, "if")
    false = _branch(spot, stmt.orelse.body if stmt.orelse else None, "else")
    for b in (true, false):
        if isinstance(b, str):
            return NoRewrite(b, NAME)
    assert isinstance(true, _Branch) and isinstance(false, _Branch) and func is not None
    outputs = sorted(true.names | false.names)
    if not outputs:
        return NoRewrite("neither branch assigns a name: torch.cond has nothing to return", NAME)
    bound = tree.bound(spot, func, before=spot.line_of(stmt))
    for name in outputs:
        if (name not in true.names or name not in false.names) and name not in bound:
            side = "if" if name in true.names else "else"
            return NoRewrite(
                f"{name} is assigned only in the {side} branch and is not bound before the if: "
                "torch.cond needs the same outputs from both branches",
                NAME,
            )
    passed = [
        n
        for n in outputs
        if n not in (true.names - true.aliases) or n not in (false.names - false.aliases)
    ]
    updated = _updated_after(spot, stmt, func, passed)
    if updated:
        name, where = updated
        return NoRewrite(
            f"{name} is passed through a branch as a clone (torch.cond forbids an output "
            f"aliasing an input) and updated in place after the if ({where}): the update would "
            "no longer reach what it aliases",
            NAME,
        )
    operands = [n for n in outputs if n in bound]
    return _rewrite(spot, stmt, func, true, false, outputs, operands, passed)


def _cond_problem(spot: Spot, stmt: cst.If, func: cst.FunctionDef | None) -> str | None:
    line = spot.site.line
    if func is None:
        return f"the if at line {line} is not inside a function: torch.cond branches are functions"
    if isinstance(stmt.orelse, cst.If) or tree.chain_top(spot, stmt) is not stmt:
        return f"the if at line {line} is part of an elif chain: torch.cond takes two branches"
    if isinstance(stmt.test, cst.BooleanOperation):
        return (
            f"the test at line {line} combines conditions with and/or: torch.cond needs one "
            "tensor predicate (combine them with & or | by hand)"
        )
    if any(isinstance(n, cst.NamedExpr) for n in tree.walk(stmt.test)):
        return f"the test at line {line} assigns with :=: torch.cond's predicate must be pure"
    found = effects.effects(spot, stmt.test)
    if found:
        return (
            f"the test at line {line} calls `{found[0].text[:50]}`, which has an effect: "
            "torch.cond's predicate is traced, not run on every call"
        )
    return None


def _branch(spot: Spot, suite: cst.BaseSuite | None, label: str) -> _Branch | str:
    """A branch's assignment lines and the names they bind, or what stops torch.cond."""
    if suite is None:
        return _Branch([], set(), None)
    smalls, compound = tree.small_statements(suite)
    if compound:
        return f"the {label} branch holds {_kind(compound[0])}: torch.cond needs plain assignments"
    names: set[str] = set()
    aliases: set[str] = set()
    for small in smalls:
        problem = _assign_problem(spot, small, label)
        if problem:
            return problem
        assigned = {n.value for n in _assigned_names(small)}
        names |= assigned
        plain = isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(small.value, cst.Name)
        aliases = (aliases | assigned) if plain else (aliases - assigned)
    if isinstance(suite, cst.SimpleStatementSuite):
        lines = [cst.SimpleStatementLine([s]) for s in smalls if not isinstance(s, cst.Pass)]
        header = None
    else:
        lines = [
            ln
            for ln in suite.body
            if not all(isinstance(s, cst.Pass) for s in ln.body)  # type: ignore[union-attr]
        ]
        header = suite.header
    return _Branch([_unsemi(ln) for ln in lines], names, header, frozenset(aliases))


def _unsemi(line: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """A line's last statement without a trailing semicolon (a line may have lost its `pass`)."""
    last = line.body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return line.with_changes(body=[*line.body[:-1], last])


def _kind(stmt: cst.BaseStatement) -> str:
    kinds = {
        cst.For: "a loop",
        cst.While: "a loop",
        cst.If: "a nested if",
        cst.With: "a with block",
    }
    return next((v for k, v in kinds.items() if isinstance(stmt, k)), f"a {type(stmt).__name__}")


def _assigned_names(small: cst.BaseSmallStatement) -> list[cst.Name]:
    if isinstance(small, cst.Assign):
        return [n for t in small.targets for n in tree.names_in_target(t.target)]
    if isinstance(small, cst.AnnAssign):
        return tree.names_in_target(small.target)
    return []


def _assign_problem(spot: Spot, small: cst.BaseSmallStatement, label: str) -> str | None:
    where = f"the {label} branch"
    if isinstance(small, cst.Pass):
        return None
    if isinstance(small, cst.AugAssign):
        target, op = spot.code(small.target), spot.code(small.operator).rstrip("=")
        plain = f"{target} = {target} {op} {spot.code(small.value)}"
        return f"{where} updates in place (`{spot.code(small)}`), which torch.cond forbids: write `{plain}`"
    if isinstance(small, cst.Return):
        return f"{where} returns: torch.cond needs both branches to produce values; return after the if"
    if isinstance(small, cst.Expr):
        return f"{where} calls `{spot.code(small)[:40]}` as a statement: torch.cond branches must be pure"
    if isinstance(small, cst.AnnAssign) and small.value is None:
        return f"{where} declares a name without a value"
    if not isinstance(small, (cst.Assign, cst.AnnAssign)):
        return f"{where} holds a `{spot.code(small)[:40]}` statement: torch.cond needs plain assignments"
    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
    for target in targets:
        bad = _bad_target(target)
        if bad:
            return f"{where} assigns to {bad}: torch.cond needs plain names"
    assert small.value is not None
    found = effects.effects(spot, small.value, moved=True)
    if found:
        return (
            f"{where} calls `{found[0].text[:50]}`, which has an effect: torch.cond's branches "
            "are traced, so it would not run on every call"
        )
    return None


def _bad_target(target: cst.BaseExpression) -> str | None:
    if isinstance(target, cst.Name):
        return None
    if isinstance(target, cst.Attribute):
        return "an attribute"
    if isinstance(target, cst.Subscript):
        return "a subscript"
    if isinstance(target, (cst.Tuple, cst.List)):
        return next((b for el in target.elements if (b := _bad_target(el.value))), None)
    return "a starred name"


def _updated_after(
    spot: Spot, stmt: cst.If, func: cst.FunctionDef, names: list[str]
) -> tuple[str, str] | None:
    """A name of `names` updated in place after the if: (name, where)."""
    end = spot.pos[stmt].end.line
    for node in tree.walk(func.body):
        if node not in spot.pos or spot.line_of(node) <= end:
            continue
        target: cst.BaseExpression | None = None
        if isinstance(node, cst.AugAssign):
            target = node.target
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method.endswith("_") and not method.startswith("__"):
                target = node.func.value
        elif isinstance(node, cst.AssignTarget) and isinstance(
            node.target, (cst.Subscript, cst.Attribute)
        ):
            target = node.target.value
        while isinstance(target, (cst.Subscript, cst.Attribute)):
            target = target.value
        if isinstance(target, cst.Name) and target.value in names:
            return target.value, f"line {spot.line_of(node)}: `{spot.code(node)[:40]}`"
    return None


def _rewrite(
    spot: Spot,
    stmt: cst.If,
    func: cst.FunctionDef,
    true: _Branch,
    false: _Branch,
    outputs: list[str],
    operands: list[str],
    passed: list[str],
) -> Rewrite:
    line = spot.line_of(stmt)
    names = (f"_tcd_true_{line}", f"_tcd_false_{line}")
    defs = [
        _branch_def(name, branch, outputs, operands) for name, branch in zip(names, (true, false))
    ]
    defs[0] = defs[0].with_changes(leading_lines=_blank_above(spot, stmt))
    pred = predicate(stmt.test)
    call = _cond_call(pred, names, outputs, operands)
    module = tree.splice(spot, stmt, [*defs, call])
    pred_code = cst.Module([]).code_for_node(pred)
    note = (
        "torch.cond traces both branches, which must give tensors of the same shape and dtype; "
        f"outputs: {', '.join(outputs)}; the predicate keeps the test's precision; the proof "
        "runs inputs that take each branch"
    )
    if passed:
        note += (
            f"; a branch that leaves {', '.join(passed)} unchanged or binds another name to it "
            "returns a clone (torch.cond forbids an output aliasing an input)"
        )
    return Rewrite(
        rule=CODE,
        family=NAME,
        safety=Safety.UNSAFE,
        title=f"turn the if at line {line} into torch.cond({pred_code}, ...)",
        note=note,
        source=tree.finish(module),
        line=spot.site.line,
        proofs=(Proof.BRANCHES,),
        payload=BranchPayload(
            function=func.name.value,
            if_line=line,
            test=spot.code(stmt.test),
            predicate=pred_code,
            passthrough=tuple(passed),
        ),
    )


def _blank_above(spot: Spot, stmt: cst.If) -> list[cst.EmptyLine]:
    """The if's comment lines, with a blank line above the nested def unless it opens its block."""
    lines = list(stmt.leading_lines)
    parent = spot.parents[stmt]
    first = parent.body[0] is stmt  # type: ignore[attr-defined]
    if first or (lines and lines[0].comment is None):
        return lines
    return [BLANK, *lines]


def _branch_def(
    name: str, branch: _Branch, outputs: list[str], operands: list[str]
) -> cst.FunctionDef:
    fresh = branch.names - branch.aliases
    values = [n if n in fresh else f"{n}.clone()" for n in outputs]
    ret = cst.parse_statement(f"return {', '.join(values)}")
    template = cst.parse_statement(f"def {name}({', '.join(operands)}):\n    pass\n")
    assert isinstance(template, cst.FunctionDef)
    body = cst.IndentedBlock([*branch.lines, ret])
    if branch.header is not None:
        body = body.with_changes(header=branch.header)
    lines = [BLANK] if name.startswith("_tcd_false") else []
    return template.with_changes(body=body, leading_lines=lines)


def _cond_call(
    pred: cst.BaseExpression, names: tuple[str, str], outputs: list[str], operands: list[str]
) -> cst.SimpleStatementLine:
    ops = (
        "()"
        if not operands
        else f"({operands[0]},)"
        if len(operands) == 1
        else f"({', '.join(operands)})"
    )
    text = f"{', '.join(outputs)} = torch.cond(__tcd_pred__, {names[0]}, {names[1]}, {ops})\n"
    call = cst.parse_statement(text)
    assert isinstance(call, cst.SimpleStatementLine)
    call = call.with_changes(leading_lines=[BLANK])
    return call.visit(tree.Substitute("__tcd_pred__", pred))  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# the predicate


def _is_item(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "item"
        and not node.args
    )


def exact_literal(node: cst.CSTNode) -> bool:
    """A number literal every float16 and bfloat16 value compares with exactly as a double does:
    0, or a value with at most 8 significant bits within float16's normal range (0.5, 2, 256)."""
    import math

    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    if not isinstance(node, (cst.Integer, cst.Float)):
        return False
    try:
        value = float(node.evaluated_value)
    except (ValueError, OverflowError):
        return False
    if value == 0:
        return True
    mantissa, _ = math.frexp(abs(value))
    return (mantissa * 256).is_integer() and 2**-14 <= abs(value) <= 65504


class _KeepPrecision(cst.CSTTransformer):
    """`x.item()` -> `x.double()`, or `x` beside exact literals in a comparison."""

    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison) -> cst.Comparison:
        operands = [original.left, *(c.comparator for c in original.comparisons)]
        new = [updated.left, *(c.comparator for c in updated.comparisons)]
        for i, node in enumerate(operands):
            others = operands[:i] + operands[i + 1 :]
            if _is_item(node) and all(exact_literal(o) for o in others):
                new[i] = new[i].func.value  # type: ignore[attr-defined]  # x.double() -> x
        return updated.with_changes(
            left=new[0],
            comparisons=[
                c.with_changes(comparator=n) for c, n in zip(updated.comparisons, new[1:])
            ],
        )

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if _is_item(original):
            func = updated.func
            assert isinstance(func, cst.Attribute)
            return updated.with_changes(func=func.with_changes(attr=cst.Name("double")))
        return updated


def predicate(test: cst.BaseExpression) -> cst.BaseExpression:
    """torch.cond's predicate for `test`, of the test's precision (module docstring)."""
    negate = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    inner = test.expression if negate else test  # type: ignore[attr-defined]
    if _is_item(inner):
        pred: cst.BaseExpression = inner.func.value  # type: ignore[attr-defined]
    else:
        pred = inner.visit(_KeepPrecision())  # type: ignore[assignment]
    if negate:
        return cst.Call(cst.parse_expression("torch.logical_not"), [cst.Arg(pred)])
    return pred


PAGE = Page(
    rewrites=(
        "an `if` on a tensor value whose branches only assign names becomes torch.cond over two "
        "nested functions; the predicate keeps the test's precision (`.item()` becomes "
        "`.double()`, or is dropped beside a literal every half-precision value compares with "
        "exactly)"
    ),
    refuses=(
        "an elif chain, and/or in the test, a test or branch with an effect (a walrus, "
        "`self.meter.update(...)`), a branch that updates in place, returns, raises or assigns "
        "an attribute, a name only one branch assigns that is not bound before, and a name "
        "passed through as a clone that is updated in place after the if"
    ),
    proof=(
        "on the workload's inputs, every input variant and generated inputs (negated, scaled, "
        "shifted, ...): each branch counted only when its if ran (the test evaluated in the "
        "original's frame), both branches taken, the predicate equal to the test, outputs, "
        "gradients and buffers equal; the patched copy compiled is timed against the original "
        "eager"
    ),
    example=(
        "import torch\n\n\ndef forward(x):\n    h = torch.relu(x)\n"
        "    if h.sum().item() > 0.1:\n        h = h * 2\n    else:\n        h = h - 1\n"
        "    return h\n"
    ),
    example_line=6,
    example_gb_type="Unsupported Tensor.item() call with capture_scalar_outputs=False",
)

RULE = Rule(
    code=CODE,
    name=NAME,
    safety=Safety.UNSAFE,
    the_break=(
        "a branch on a tensor value (`if t.item() > c:`, `if t.any():`) whose branches assign "
        "plain names"
    ),
    the_rewrite=(
        "`torch.cond` over two nested functions, the predicate at the test's precision "
        "(`t.item() > 0.1` becomes `t.double() > 0.1`)"
    ),
    statements=(cst.If,),
    proofs=(Proof.BRANCHES,),
    match=match,
    page=PAGE,
    checked=(
        "each branch taken (counted only where its `if` ran), the predicate equal to the test, "
        "outputs, gradients and buffers equal, on generated inputs and every input variant"
    ),
)
