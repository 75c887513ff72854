"""The side-effect walk (torch-free): which calls in the code a patch would skip or move have an
effect, whether hoisting them keeps it, and which receivers are really logging.

Method. Every call in an expression is pure or an effect. Pure is a small list, resolved through
the imports and the scopes around the statement (tree.resolve), never by a bare name:
- tensor reductions, shape reads and conversions called as methods (`h.mean()`, `x.size(0)`,
  `t.item()`), and the same functions under `torch.` (`torch.isnan`, `torch.norm`);
- `str`, `repr`, `format`, `len` and a few numeric builtins (`abs`, `min`, `round`, ...) when
  nothing rebinds them; `"...".format(...)` and `"...".join(...)` on a string literal; f-strings
  (their fields are walked); `math.` functions; `logging.getLogger(...)`.
Code that a patch moves into traced functions (torch.cond's branches) may also call `torch.`
functions that do not update in place, tensor methods that return new tensors, and submodules
(`self.lin(x)`). Anything else is an effect: `queue.pop()`, `next(it)`, `self.meter.update(...)`,
a walrus (`n := ...`, a binding compiled runs would skip).

An effect the patch would skip is either refused (the call named) or hoisted: evaluated before
the guard into a `_tcd_` local, so eager and compiled runs both keep it. Hoisting is done only
where it is exact and compiles:
- the effect is evaluated on every run of the statement (not the right of `and`/`or`, a branch
  of `a if c else b`, a comprehension's body or a lambda);
- nothing read before it in the same statement is evaluated after it once hoisted (`print(len(q),
  q.pop())` is refused: `len(q)` would see the popped queue);
- the hoisted code holds no call known to break a graph (`.item()`, `.tolist()`, `.numpy()`,
  `print`, a call into a non-PyTorch library); the proof then counts the breaks as PyTorch does.

Logging means a receiver bound from `logging.getLogger(...)` (a module-level or local name, or
`self.<attr>` assigned only from it in the class), the `logging` module, `warnings`, or the
builtin `print`. `tracker.log(h.sum())` (a metrics logger) or `self.stats.info(...)` is not:
guarding it would skip what it does, and the proof's "eager logs equal" would compare nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from . import tree
from .tree import Spot

LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
)
# tensor reductions, shape reads and conversions: pure as methods and under torch.
PURE_METHODS = frozenset(
    {
        "item", "tolist", "sum", "mean", "std", "var", "max", "min", "amax", "amin", "argmax",
        "argmin", "norm", "abs", "any", "all", "prod", "median", "numel", "size", "dim",
        "float", "double", "half", "bfloat16", "int", "long", "bool", "detach", "cpu",
        "isnan", "isinf", "isfinite", "count_nonzero", "nansum", "nanmean", "logsumexp",
        "clone", "contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze", "t",
        "transpose", "permute", "to", "type", "numpy", "nelement", "element_size", "stride",
        "allclose", "equal", "isclose",
    }
)  # fmt: skip
# what code moved into torch.cond's branches may also call as tensor methods: new tensors
TENSOR_METHODS = PURE_METHODS | frozenset(
    {
        "exp", "log", "log1p", "expm1", "sigmoid", "tanh", "relu", "softmax", "log_softmax",
        "clamp", "clip", "sqrt", "rsqrt", "pow", "neg", "sign", "round", "floor", "ceil",
        "matmul", "mm", "bmm", "expand", "expand_as", "repeat", "gather", "masked_fill",
        "where", "type_as", "new_zeros", "new_ones", "new_empty", "new_full", "sin", "cos",
        "reciprocal", "square", "cumsum", "flip", "roll", "narrow", "chunk", "split", "add",
        "sub", "mul", "div", "lerp", "maximum", "minimum", "outer", "diagonal", "tril", "triu",
    }
)  # fmt: skip
PURE_BUILTINS = frozenset(
    {"str", "repr", "format", "len", "abs", "min", "max", "round", "int", "float", "bool"}
)
# torch functions with an effect (or that break): never pure
TORCH_EFFECTS = ("torch.manual_seed", "torch.save", "torch.load", "torch._dynamo", "torch.set_")
# calls whose hoisted code would break the graph
BREAKING_METHODS = frozenset({"item", "tolist", "numpy", "__array__"})
BREAKING_BUILTINS = frozenset({"print", "input", "open", "breakpoint"})


@dataclass(frozen=True)
class Effect:
    """A call (or walrus) with an effect: its node, its source, whether it runs on every run of
    the statement, and why hoisting it would not compile (None: it would)."""

    node: cst.BaseExpression
    text: str
    conditional: bool
    breaks: str | None


def effects(spot: Spot, node: cst.CSTNode, moved: bool = False) -> list[Effect]:
    """The outermost calls in `node` with an effect, in evaluation order. `moved`: the code moves
    into traced functions (torch.cond's branches) rather than being skipped."""
    walker = _Walk(spot, moved)
    node.visit(walker)
    return walker.found


class _Walk(cst.CSTVisitor):
    def __init__(self, spot: Spot, moved: bool) -> None:
        self.spot, self.moved = spot, moved
        self.found: list[Effect] = []
        self._conditional = 0

    def _effect(self, node: cst.BaseExpression) -> None:
        self.found.append(
            Effect(node, self.spot.code(node), self._conditional > 0, breaking(self.spot, node))
        )

    def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
        self._effect(node)
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        if not pure_call(self.spot, node, self.moved):
            self._effect(node)
            return False
        return True

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> bool:
        node.left.visit(self)
        self._conditional += 1
        node.right.visit(self)
        self._conditional -= 1
        return False

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        node.test.visit(self)
        self._conditional += 1
        node.body.visit(self)
        node.orelse.visit(self)
        self._conditional -= 1
        return False

    def _comprehension(self, node: cst.CSTNode) -> bool:
        self._conditional += 1
        for child in node.children:
            child.visit(self)
        self._conditional -= 1
        return False

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return self._comprehension(node)

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return self._comprehension(node)

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return self._comprehension(node)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return self._comprehension(node)

    def visit_Await(self, node: cst.Await) -> bool:
        self._effect(node)
        return False

    def visit_Yield(self, node: cst.Yield) -> bool:
        self._effect(node)
        return False


def pure_call(spot: Spot, call: cst.Call, moved: bool = False) -> bool:
    """Whether a call is in the pure list (module docstring); its arguments are walked apart."""
    func = call.func
    full = tree.resolve(spot, func) if tree.dotted(func) else None
    if full is not None:
        if "." not in full:
            return full in PURE_BUILTINS and full not in spot.imports
        if full == "logging.getLogger" or full.startswith("math."):
            return True
        if tree.is_torch(full):
            if full.startswith(TORCH_EFFECTS) or full.endswith("_"):
                return False
            return moved or full.rpartition(".")[2] in TENSOR_METHODS
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        if isinstance(func.value, (cst.SimpleString, cst.FormattedString)):
            return method in ("format", "join")
        head = (tree.dotted(func) or "").split(".")[0]
        if full is not None and head in spot.imports:
            return False  # a function of another imported module (numpy, a user module)
        if moved and _self_chain(func) and isinstance(func.value, cst.Name):
            return True  # self.lin(x): a submodule, moved into the branch with its inputs
        methods = TENSOR_METHODS if moved else PURE_METHODS
        return method in methods and not method.endswith("_")
    return False


def _self_chain(func: cst.Attribute) -> bool:
    return tree.root(func) == "self"


def breaking(spot: Spot, node: cst.CSTNode) -> str | None:
    """Why code holding `node` would break a graph once hoisted (None: no known break)."""
    for call in tree.calls(node):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in BREAKING_METHODS:
            return f"`.{func.attr.value}()`"
        full = tree.resolve(spot, func) if tree.dotted(func) else None
        if full in BREAKING_BUILTINS:
            return f"`{full}()`"
        head = (tree.dotted(func) or "").split(".")[0]
        if full and head in spot.imports and not tree.is_torch(full):
            lib = full.split(".")[0]
            if lib not in ("math", "logging", "warnings"):
                return f"a call into {lib} (`{spot.code(call)[:40]}`)"
    return None


# ---------------------------------------------------------------------------------------------
# hoisting


@dataclass(frozen=True)
class Hoisted:
    """Effects taken out of a statement: the assignments to run first, and the statement with
    each effect replaced by its `_tcd_` local."""

    assigns: tuple[cst.SimpleStatementLine, ...]
    node: cst.CSTNode
    calls: tuple[str, ...]


def hoist(spot: Spot, node: cst.CSTNode, found: list[Effect], what: str) -> Hoisted | str:
    """The effects `found` in `node` hoisted into locals before it, or why they cannot be (the
    call named). `what` names the code for the reason (`the print's arguments`)."""
    line = spot.line_of(spot.stmt)
    for e in found:
        if isinstance(e.node, cst.NamedExpr):
            target = spot.code(e.node.target)
            return (
                f"{what} at line {line}: `{target}` is bound with := and compiled runs would "
                "skip the binding: bind it on its own line first"
            )
        if e.conditional:
            return (
                f"{what} at line {line}: `{e.text[:50]}` has an effect and runs only on some "
                "runs of the statement: compiled runs would skip it"
            )
        if e.breaks:
            return (
                f"{what} at line {line}: `{e.text[:50]}` has an effect compiled runs would skip, "
                f"and hoisting it would not compile ({e.breaks}): move it out by hand"
            )
    early = _read_before(spot, node, found[0].node)
    if early:
        return (
            f"{what} at line {line}: `{early}` is read before `{found[0].text[:50]}`, which has "
            "an effect: hoisting the call would change what is read; put the call on its own "
            "line first"
        )
    names = [
        f"_tcd_{line}" if len(found) == 1 else f"_tcd_{line}_{i + 1}" for i in range(len(found))
    ]
    assigns = []
    for name, e in zip(names, found):
        stmt = tree.statement(f"{name} = __tcd_value__")
        assert isinstance(stmt, cst.SimpleStatementLine)
        assigns.append(stmt.visit(tree.Substitute("__tcd_value__", e.node)))  # type: ignore[arg-type]
    new = node.visit(tree.ReplaceNodes({e.node: cst.Name(n) for e, n in zip(found, names)}))
    return Hoisted(tuple(assigns), new, tuple(e.text for e in found))  # type: ignore[arg-type]


def _read_before(spot: Spot, node: cst.CSTNode, first: cst.CSTNode) -> str | None:
    """A name read before `first` in `node` (not a callee, a keyword, an attribute's name or a
    constant): what hoisting `first` would reorder."""
    order = tree.walk(node)
    inside = {id(n) for n in tree.walk(first)}
    start = next(i for i, n in enumerate(order) if n is first)
    skip: set[int] = set()
    for n in order:
        if isinstance(n, cst.Call) and tree.dotted(n.func):
            skip |= {id(m) for m in tree.walk(n.func)}  # `torch.isnan`, `logger.info`
        elif isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute):
            skip.add(id(n.func.attr))
        elif isinstance(n, cst.Arg) and n.keyword is not None:
            skip.add(id(n.keyword))
        elif isinstance(n, cst.Attribute):
            skip.add(id(n.attr))
    for n in order[:start]:
        if id(n) in inside or id(n) in skip or not isinstance(n, cst.Name):
            continue
        if n.value in ("True", "False", "None") or tree.resolve(spot, n) in PURE_BUILTINS:
            continue
        return n.value
    return None


# ---------------------------------------------------------------------------------------------
# logging receivers


def report_kind(spot: Spot, small: cst.CSTNode) -> tuple[str | None, str | None]:
    """What a statement reports to (stdout, logs, warnings), and why a call that looks like a
    report is not one (its receiver is not a logger). (None, None): not a report call."""
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return None, None
    call = small.value
    func = call.func
    if isinstance(func, cst.Name):
        full = tree.resolve(spot, func)
        if full == "print" and "print" not in spot.imports:
            return "stdout", None
        if full == "warnings.warn":
            return "warnings", None
        if full and full.startswith("logging.") and full[8:] in LOG_METHODS:
            return "logs", None
        if func.value in ("print", "warn") or func.value in LOG_METHODS:
            return None, (
                f"`{func.value}` at line {spot.site.line} is not the builtin print, warnings.warn "
                f"or a logging function (it resolves to {full or 'a local binding'})"
            )
        return None, None
    if not isinstance(func, cst.Attribute) or func.attr.value not in LOG_METHODS:
        return None, None
    receiver = func.value
    full = tree.resolve(spot, receiver) if tree.dotted(receiver) else None
    if full == "warnings" and func.attr.value == "warn":
        return "warnings", None
    if full == "logging":
        return "logs", None
    if _is_logger(spot, receiver):
        return "logs", None
    return None, (
        f"`{spot.code(func)}` at line {spot.site.line} is not logging: its receiver "
        f"`{spot.code(receiver)[:40]}` is not bound from logging.getLogger(...) (it may be a "
        "metrics logger); skipping it in compiled runs could drop what it does"
    )


def _is_get_logger(spot: Spot, value: cst.BaseExpression | None) -> bool:
    return (
        isinstance(value, cst.Call)
        and tree.dotted(value.func) is not None
        and tree.resolve(spot, value.func) == "logging.getLogger"
    )


def _is_logger(spot: Spot, receiver: cst.BaseExpression) -> bool:
    """A receiver bound from logging.getLogger(...): the call itself, a name every binding of
    which in its scope is such a call, or `self.<attr>` assigned only such calls in the class."""
    if _is_get_logger(spot, receiver):
        return True
    if isinstance(receiver, cst.Name):
        return _name_is_logger(spot, receiver.value)
    if (
        isinstance(receiver, cst.Attribute)
        and isinstance(receiver.value, cst.Name)
        and receiver.value.value == "self"
    ):
        values = _self_assignments(spot, receiver.attr.value)
        return bool(values) and all(_is_get_logger(spot, v) for v in values)
    return False


def _name_is_logger(spot: Spot, name: str) -> bool:
    for func in spot.funcs():
        if name in tree.params(func):
            return False
        values = _assigned_values(func.body, name)
        if values is not None:
            return bool(values) and all(_is_get_logger(spot, v) for v in values)
    values = _assigned_values(spot.module, name)
    return bool(values) and all(_is_get_logger(spot, v) for v in values or [])


def _assigned_values(scope: cst.CSTNode, name: str) -> list[cst.BaseExpression | None] | None:
    """Values `name` is assigned in a scope, nested functions and classes left out (None: the
    scope does not bind it; a None value: it is bound some other way, a loop target, an import,
    a def, a tuple target)."""
    visitor = _Assigned(name, scope)
    scope.visit(visitor)
    return visitor.values if visitor.values else None


class _Assigned(cst.CSTVisitor):
    def __init__(self, name: str, scope: cst.CSTNode) -> None:
        self.name, self.scope = name, scope
        self.values: list[cst.BaseExpression | None] = []

    def _binds(self, target: cst.BaseExpression) -> bool:
        return any(n.value == self.name for n in tree.names_in_target(target))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node is self.scope:
            return True
        if node.name.value == self.name:
            self.values.append(None)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        if node.name.value == self.name:
            self.values.append(None)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(self._binds(t.target) for t in node.targets):
            plain = len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
            self.values.append(node.value if plain else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._binds(node.target):
            self.values.append(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._binds(node.target):
            self.values.append(None)

    def visit_For(self, node: cst.For) -> None:
        if self._binds(node.target):
            self.values.append(None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if self._binds(node.target):
            self.values.append(None)

    def visit_AsName(self, node: cst.AsName) -> None:
        if isinstance(node.name, cst.Name) and node.name.value == self.name:
            self.values.append(None)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None and (tree.dotted(node.name) or "").split(".")[0] == self.name:
            self.values.append(None)


def _self_assignments(spot: Spot, attr: str) -> list[cst.BaseExpression | None]:
    klass = spot.klass()
    if klass is None:
        return []
    out: list[cst.BaseExpression | None] = []
    for node in tree.walk(klass):
        targets: list[cst.BaseExpression] = []
        value: cst.BaseExpression | None = None
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
            value = node.value if len(node.targets) == 1 else None
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            targets = [node.target]
            value = node.value if isinstance(node, cst.AnnAssign) else None
        for t in targets:
            if (
                isinstance(t, cst.Attribute)
                and isinstance(t.value, cst.Name)
                and t.value.value == "self"
                and t.attr.value == attr
            ):
                out.append(value)
    return out
