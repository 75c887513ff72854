"""Source patches for graph breaks in the user's own file, planned with libcst (torch-free).

Method. A break site is a line PyTorch reports (with its gb_type and GB id). The file is parsed with
libcst, whose tree keeps every comment and blank line, and `MetadataWrapper` + `PositionProvider`
map the line to its statement: the innermost statement whose range holds the line, or for a compound
statement the one whose header holds it. The statement's shape (plus the gb_type for an `if` on a
tensor) picks one rule, which edits the tree and prints the whole module back:

    TCD101 leftover-graph-break  delete `torch._dynamo.graph_break()`              safe
    TCD102 guard-logging         `if not torch.compiler.is_compiling():` around    unsafe
                                 a print, logging call or warnings.warn
    TCD103 guard-check           `not torch.compiler.is_compiling() and (TEST)`    unsafe
                                 for an `if` on a tensor whose body only reports
    TCD104 tensor-cond           an `if` on a tensor that only assigns names       unsafe
                                 becomes `torch.cond` over two nested functions
    TCD105 custom-op             an assignment calling another library (scipy,     unsafe
                                 numpy) becomes a `torch.library.custom_op`

Anything else (a `.tolist()` feeding a loop, a `.numpy()` array steering Python) gets a NoRewrite
whose reason a user reads. "unsafe" is ruff's meaning: compiled runs behave differently (they skip
the output) or the proof must check the rewrite; this module only plans and writes text, another
module applies the patch to a copy and proves it in a child process.

Pitfalls, each handled here:
- Under Dynamo `torch.compiler.is_compiling()` is a constant True, so a guarded branch is dropped
  at trace time; in eager it is False and the output is unchanged. A guarded `if` with an `else`
  would still run the else when compiling: the whole statement is wrapped instead.
- PyTorch may report an inner line of a multi-line statement: the statement holding the line is
  the one rewritten (names and titles use its first line).
- torch.cond forbids a branch returning its input (aliasing, checked in 2.13 even in eager): a
  name one branch leaves alone, or binds to another name (`y = x`), is returned as `name.clone()`.
  In-place updates (`h *= 2`) are refused for the same reason; views (`x.view(...)`) are left to
  the proof. Closures over `self` and other locals work; only the branch outputs bound before the
  `if` become operands. torch.cond in eager traces its branches with Dynamo, which imports the
  module by name: the patched module must be importable as itself (in sys.modules).
- A custom op whose inputs require grad raises in backward (no autograd formula), and opcheck
  fails the same way (test_aot_dispatch_dynamic), where the original's `.detach().numpy()` just
  stopped the gradient: a tensor input the expression only reads through `.detach()` / `.numpy()`
  is passed as `x.detach()`, so training behaves as before and opcheck runs on detached inputs.
  Its fake must know the output's shape: the eager run is observed first (`needs_observation`).
  Dynamo traces many numpy calls itself (trace_numpy), so the family applies only where PyTorch
  reported a break at the line.
- libcst's `MetadataWrapper` copies the module: edits go to `wrapper.module`, whose nodes the
  metadata maps; continuation lines inside brackets are indented relative to their block, so a
  wrapped multi-line call moves with its block.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Mapping, Sequence

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, ParentNodeProvider, PositionProvider

LEFTOVER, GUARD_LOGGING, GUARD_CHECK, TENSOR_COND, CUSTOM_OP = (
    "leftover-graph-break",
    "guard-logging",
    "guard-check",
    "tensor-cond",
    "custom-op",
)
CODES = {
    LEFTOVER: "TCD101",
    GUARD_LOGGING: "TCD102",
    GUARD_CHECK: "TCD103",
    TENSOR_COND: "TCD104",
    CUSTOM_OP: "TCD105",
}
GUARD = "not torch.compiler.is_compiling()"
GRAPH_BREAK = "torch._dynamo.graph_break"
LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
)
CHECK_ORDER = ("stdout", "warnings", "logs", "branches", "opcheck")
REPORT_WORD = {"stdout": "print", "warnings": "warning", "logs": "log record"}
# gb_types of a jump on a tensor's value (an `if` whose test reads a tensor)
TENSOR_JUMP = re.compile(r"generic_jump|data[- ]dependent|\.item\(\)|branch", re.IGNORECASE)
BLANK = cst.EmptyLine(indent=False)
OBSERVED_SCALARS = {"int": "int", "float": "float", "bool": "bool"}


@dataclass(frozen=True)
class Site:
    """A graph break in the user's file: the line PyTorch reports, its gb_type and GB id.

    `file` (optional) names the custom op (`tcdoctor_patch::<stem>_<function>_l<line>`)."""

    line: int
    gb_type: str
    gb_id: str | None = None
    file: str | None = None


@dataclass(frozen=True)
class Rewrite:
    """A source patch: the whole rewritten module, what it does, and what its proof must check."""

    rule: str
    family: str
    safety: str
    title: str
    note: str
    source: str
    line: int
    checks: tuple[str, ...]
    op: dict | None = None
    branch: dict | None = None


@dataclass(frozen=True)
class NoRewrite:
    """No mechanical patch: one line saying why, and the family whose precondition failed."""

    reason: str
    family: str | None = None


@dataclass
class _Spot:
    """The parsed module and the statement at the break site."""

    site: Site
    module: cst.Module
    pos: Mapping[cst.CSTNode, CodeRange]
    parents: Mapping[cst.CSTNode, cst.CSTNode]
    stmt: cst.BaseStatement
    imports: dict[str, str]

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node).strip()

    def line_of(self, node: cst.CSTNode) -> int:
        return self.pos[node].start.line

    def func(self, node: cst.CSTNode | None = None) -> cst.FunctionDef | None:
        """The innermost function holding `node` (default: the site's statement)."""
        node = self.parents.get(self.stmt if node is None else node)
        while node is not None and not isinstance(node, cst.FunctionDef):
            node = self.parents.get(node)
        return node

    def funcs(self) -> list[cst.FunctionDef]:
        """Every function holding the statement, innermost first."""
        out, node = [], self.func()
        while node is not None:
            out.append(node)
            node = self.func(node)
        return out


# ---------------------------------------------------------------------------------------------
# public API


def plan(source: str, site: Site, observed: dict | None = None) -> Rewrite | NoRewrite:
    """The patch for the break at `site` in `source`, or why there is none. Never raises."""
    try:
        spot = _locate(source, site)
        if isinstance(spot, NoRewrite):
            return spot
        return _decide(spot, observed)
    except Exception as exc:  # a planner bug must not take the analysis down
        return NoRewrite(f"the planner failed on this file ({type(exc).__name__}: {exc})")


def needs_observation(source: str, site: Site) -> dict | None:
    """What the eager run must record for the custom-op family (None for every other family)."""
    try:
        spot = _locate(source, site)
        if isinstance(spot, NoRewrite) or not isinstance(spot.stmt, cst.SimpleStatementLine):
            return None
        candidate = _op_candidate(spot)
    except Exception:  # same contract as plan
        return None
    if not isinstance(candidate, _OpCall):
        return None
    return {
        "line": spot.line_of(spot.stmt),
        "function": candidate.function,
        "inputs": list(candidate.inputs),
        "output": candidate.target,
    }


def unified_diff(before: str, after: str, path: str) -> str:
    """A unified diff that `git apply` and `patch -p1` apply from the target's directory."""
    if before == after:
        return ""
    name = PurePath(path).as_posix()
    lines = difflib.unified_diff(_lines(before), _lines(after), f"a/{name}", f"b/{name}")
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _lines(text: str) -> list[str]:
    """Lines split at \\n only, as patch tools count them (str.splitlines also splits at \\f, \\r)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


# ---------------------------------------------------------------------------------------------
# locating the statement


def _locate(source: str, site: Site) -> _Spot | NoRewrite:
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
        return NoRewrite(f"the file does not parse ({first}): no patch for a file Python rejects")
    lines = _lines(source)
    if not 1 <= site.line <= len(lines):
        return NoRewrite(f"line {site.line} is outside the file ({len(lines)} lines)")
    text = lines[site.line - 1].strip()
    if not text or text.startswith("#"):
        return NoRewrite(f"line {site.line} holds no statement (blank or a comment)")
    wrapper = MetadataWrapper(module)
    pos = wrapper.resolve(PositionProvider)
    stmt = _statement_at(pos, site.line)
    if stmt is None:
        return NoRewrite(f"line {site.line} holds no statement (`{text[:60]}`)")
    parents = wrapper.resolve(ParentNodeProvider)
    return _Spot(site, wrapper.module, pos, parents, stmt, _imports(wrapper.module))


def _statement_at(pos: Mapping[cst.CSTNode, CodeRange], line: int) -> cst.BaseStatement | None:
    """The innermost statement whose range (a compound statement: its header) holds `line`."""
    found = [
        node
        for node, where in pos.items()
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        and where.start.line <= line <= _last_line(node, where, pos)
    ]
    return max(found, key=lambda n: (pos[n].start.line, -pos[n].end.line), default=None)


def _last_line(node: cst.CSTNode, where: CodeRange, pos: Mapping[cst.CSTNode, CodeRange]) -> int:
    """A simple statement's last line; a compound statement's last header line."""
    if isinstance(node, cst.SimpleStatementLine):
        return where.end.line
    body = getattr(node, "body", None)
    if isinstance(body, cst.SimpleStatementSuite):
        return pos[body].start.line
    if isinstance(body, cst.IndentedBlock) and body.body:
        first = body.body[0]
        starts = [pos[first].start.line] + [
            pos[d].start.line for d in getattr(first, "decorators", ())
        ]
        return min(starts) - 1
    return where.start.line


class _ImportMap(cst.CSTVisitor):
    """Local name -> dotted name it is bound to by an import anywhere in the module."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _dotted(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.names[alias.asname.name.value] = full
            else:
                self.names[full.split(".")[0]] = full.split(".")[0]

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = _dotted(node.module) or ""
        for alias in node.names:
            name = _dotted(alias.name) or ""
            local = alias.asname.name.value if alias.asname else name  # type: ignore[union-attr]
            self.names[local] = f"{base}.{name}"


def _imports(module: cst.Module) -> dict[str, str]:
    visitor = _ImportMap()
    module.visit(visitor)
    return visitor.names


# ---------------------------------------------------------------------------------------------
# small helpers on expressions


def _dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a chain of names, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr.value}" if head else None
    return None


def _root(node: cst.BaseExpression) -> str | None:
    """The name an expression chain starts from: `a` in `a.b(c)[0].d`."""
    while isinstance(node, (cst.Attribute, cst.Call, cst.Subscript)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None


def _resolve(dotted: str, imports: Mapping[str, str]) -> str:
    head, _, rest = dotted.partition(".")
    full = imports.get(head, head)
    return f"{full}.{rest}" if rest else full


def _is_torch(full: str) -> bool:
    return full == "torch" or full.startswith("torch.")


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(call)

    node.visit(_Calls())
    return found


def _method_calls(node: cst.CSTNode, method: str) -> list[cst.Call]:
    return [
        c
        for c in _calls(node)
        if isinstance(c.func, cst.Attribute) and c.func.attr.value == method and not c.args
    ]


def _report_kind(node: cst.BaseSmallStatement, imports: Mapping[str, str]) -> str | None:
    """What a print / logging / warnings.warn statement writes to: stdout, logs or warnings."""
    if not isinstance(node, cst.Expr) or not isinstance(node.value, cst.Call):
        return None
    func = node.value.func
    if isinstance(func, cst.Name):
        full = imports.get(func.value, func.value)
        if full == "print":
            return "stdout"
        if full == "warnings.warn":
            return "warnings"
        return "logs" if full.startswith("logging.") and full[8:] in LOG_METHODS else None
    if not isinstance(func, cst.Attribute) or func.attr.value not in LOG_METHODS:
        return None
    root = _root(func.value)
    owner = imports.get(root, "") if root else ""
    if owner == "warnings" and func.attr.value == "warn":
        return "warnings"
    return "logs" if owner in ("", "logging") else None


def _is_graph_break(node: cst.BaseSmallStatement, imports: Mapping[str, str]) -> bool:
    if not isinstance(node, cst.Expr) or not isinstance(node.value, cst.Call):
        return False
    dotted = _dotted(node.value.func)
    if dotted is None:
        return False
    known = dotted in (GRAPH_BREAK, "_dynamo.graph_break", "graph_break")
    return known or _resolve(dotted, imports) == GRAPH_BREAK


# ---------------------------------------------------------------------------------------------
# choosing the rule


def _decide(spot: _Spot, observed: dict | None) -> Rewrite | NoRewrite:
    if isinstance(spot.stmt, cst.If):
        return _plan_if(spot)
    if isinstance(spot.stmt, cst.SimpleStatementLine):
        return _plan_simple(spot, observed)
    return _unmatched(spot)


def _plan_simple(spot: _Spot, observed: dict | None) -> Rewrite | NoRewrite:
    stmt = spot.stmt
    assert isinstance(stmt, cst.SimpleStatementLine)
    for small in stmt.body:
        if _is_graph_break(small, spot.imports):
            return _leftover(spot, stmt, small)
    for small in stmt.body:
        kind = _report_kind(small, spot.imports)
        if kind is not None:
            if len(stmt.body) > 1:
                return _several(spot, GUARD_LOGGING)
            return _guard_logging(spot, stmt, kind)
    candidate = _op_candidate(spot)
    if isinstance(candidate, (_OpCall, NoRewrite)):
        return (
            _custom_op(spot, candidate, observed) if isinstance(candidate, _OpCall) else candidate
        )
    return _unmatched(spot)


def _several(spot: _Spot, family: str) -> NoRewrite:
    return NoRewrite(
        f"line {spot.site.line} holds several statements (`{spot.code(spot.stmt)[:60]}`): "
        "put the one that breaks on its own line first",
        family,
    )


def _plan_if(spot: _Spot) -> Rewrite | NoRewrite:
    stmt = spot.stmt
    assert isinstance(stmt, cst.If)
    if not (_method_calls(stmt.test, "item") or TENSOR_JUMP.search(spot.site.gb_type)):
        return _unmatched(spot)
    top = _chain_top(spot, stmt)
    smalls, compound = _branch_statements(top)
    kinds = [_report_kind(s, spot.imports) for s in smalls]
    if any(kinds):
        return _guard_check(spot, top, smalls, compound, kinds)
    if any(isinstance(s, cst.Raise) for s in smalls):
        return NoRewrite(
            f"the if at line {spot.site.line} raises on a tensor value: a data-dependent check "
            "that compiled runs must keep; express it with torch._check by hand"
        )
    return _tensor_cond(spot, stmt)


def _chain_top(spot: _Spot, stmt: cst.If) -> cst.If:
    """The first `if` of an if/elif chain holding `stmt`."""
    parent = spot.parents.get(stmt)
    while isinstance(parent, cst.If) and parent.orelse is stmt:
        stmt, parent = parent, spot.parents.get(parent)
    return stmt


def _suites(top: cst.If) -> list[cst.BaseSuite]:
    """Every body of an if/elif/else chain."""
    out: list[cst.BaseSuite] = [top.body]
    if isinstance(top.orelse, cst.If):
        out += _suites(top.orelse)
    elif isinstance(top.orelse, cst.Else):
        out.append(top.orelse.body)
    return out


def _small_statements(suite: cst.BaseSuite) -> tuple[list, list]:
    """A suite's small statements, and its compound statements (loops, nested ifs, ...)."""
    if isinstance(suite, cst.SimpleStatementSuite):
        return list(suite.body), []
    smalls, compound = [], []
    for line in suite.body:
        if isinstance(line, cst.SimpleStatementLine):
            smalls += line.body
        else:
            compound.append(line)
    return smalls, compound


def _branch_statements(top: cst.If) -> tuple[list, list]:
    smalls, compound = [], []
    for suite in _suites(top):
        s, c = _small_statements(suite)
        smalls += s
        compound += c
    return smalls, compound


def _unmatched(spot: _Spot) -> NoRewrite:
    """Family 6 and the rest: a reason naming what stops a mechanical patch."""
    stmt, line, gb = spot.stmt, spot.site.line, spot.site.gb_type
    if _method_calls(stmt, "tolist"):
        return NoRewrite(
            f"the list from .tolist() at line {line} {_feeds(spot)}: no mechanical rewrite keeps "
            "the computation; rewrite it with tensor ops by hand"
        )
    if _method_calls(stmt, "numpy"):
        return NoRewrite(
            f"the array from .numpy() at line {line} {_feeds(spot)}: no mechanical rewrite keeps "
            "the computation; keep it in torch ops, or wrap it in a custom op by hand"
        )
    if _method_calls(stmt, "item"):
        return NoRewrite(
            f"the Python number from .item() at line {line} leaves the graph: keep it a 0-dim "
            "tensor by hand, or set torch._dynamo.config.capture_scalar_outputs = True "
            "(process-wide)"
        )
    what = type(stmt).__name__ if not isinstance(stmt, cst.SimpleStatementLine) else "statement"
    return NoRewrite(f'no mechanical patch for "{gb}" at line {line} ({what} `{_head(spot)}`)')


def _head(spot: _Spot) -> str:
    return spot.code(spot.stmt).splitlines()[0][:60]


def _feeds(spot: _Spot) -> str:
    """How the value a statement binds is used later in its function: loop, branch, or Python."""
    stmt = spot.stmt
    if isinstance(stmt, cst.For):
        return "drives a Python loop"
    names = _targets_of(stmt) if isinstance(stmt, cst.SimpleStatementLine) else set()
    func = spot.func()
    if not names or func is None:
        return "leaves the graph as Python values"
    line = spot.line_of(stmt)
    for node in _walk(func.body):
        if isinstance(node, (cst.For, cst.While, cst.If)) and spot.line_of(node) > line:
            header = node.iter if isinstance(node, cst.For) else node.test
            if names & set(_reads(header)):
                kind = "branch" if isinstance(node, cst.If) else "loop"
                return f"drives a Python {kind} (line {spot.line_of(node)})"
    return "leaves the graph as Python values"


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class _All(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            found.append(n)
            return True

    node.visit(_All())
    return found


# ---------------------------------------------------------------------------------------------
# names: what a function binds, what an expression reads


def _names_in_target(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _names_in_target(el.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in_target(target.value)
    return []


class _Bindings(cst.CSTVisitor):
    """Names a function body binds (not inside nested functions, classes or comprehensions)."""

    def __init__(self) -> None:
        self.found: list[cst.Name] = []

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.found += _names_in_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.found += _names_in_target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.found += _names_in_target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self.found += _names_in_target(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.found += _names_in_target(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self.found += _names_in_target(node.name)  # type: ignore[arg-type]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.found.append(node.name)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.found.append(node.name)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return False

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return False

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return False

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return False


def _params(func: cst.FunctionDef) -> list[str]:
    p = func.params
    every = [*p.posonly_params, *p.params, *p.kwonly_params]
    every += [s for s in (p.star_arg, p.star_kwarg) if isinstance(s, cst.Param)]
    return [param.name.value for param in every]


def _bound(spot: _Spot, func: cst.FunctionDef, before: int | None = None) -> set[str]:
    """A function's parameters and the names its body binds (on lines before `before`)."""
    visitor = _Bindings()
    func.body.visit(visitor)
    names = {n.value for n in visitor.found if before is None or spot.line_of(n) < before}
    return names | set(_params(func))


def _targets_of(stmt: cst.SimpleStatementLine) -> set[str]:
    visitor = _Bindings()
    stmt.visit(visitor)
    return {n.value for n in visitor.found}


class _Reads(cst.CSTVisitor):
    """Names an expression reads, in order; attributes read off a name other than to call them."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.attrs: list[cst.Attribute] = []
        self._called: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        self._called.add(id(node.func))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if isinstance(node.value, cst.Name) and id(node) not in self._called:
            self.attrs.append(node)
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value not in self.names:
            self.names.append(node.value)


def _reads(node: cst.CSTNode) -> list[str]:
    visitor = _Reads()
    node.visit(visitor)
    return visitor.names


# ---------------------------------------------------------------------------------------------
# editing the tree


def _pass_line(leading: Sequence[cst.EmptyLine] = ()) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Pass()], leading_lines=leading)


def _splice(spot: _Spot, old: cst.BaseStatement, new: Sequence[cst.BaseStatement]) -> cst.Module:
    """The module with statement `old` replaced by the statements `new` in its block."""
    parent = spot.parents[old]
    body = list(parent.body)  # type: ignore[attr-defined]
    i = next(k for k, s in enumerate(body) if s is old)
    body[i : i + 1] = new
    return _replace_body(spot, parent, body)


def _replace_body(spot: _Spot, parent: cst.CSTNode, body: list) -> cst.Module:
    if isinstance(parent, cst.Module):
        return spot.module.with_changes(body=body)
    return spot.module.deep_replace(parent, parent.with_changes(body=body))


def _wrap_guard(stmt: cst.BaseStatement) -> cst.If:
    """`if not torch.compiler.is_compiling():` around a statement, its comments kept above."""
    return cst.If(
        test=cst.parse_expression(GUARD),
        body=cst.IndentedBlock([stmt.with_changes(leading_lines=())]),
        leading_lines=stmt.leading_lines,
    )


def _finish(module: cst.Module) -> str:
    """The module's code, with `import torch` added when the file does not bind `torch`."""
    return _ensure_torch(module).code


def _is_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def _import_end(body: Sequence[cst.BaseStatement]) -> int:
    """Index after the last top-level import before the first def or class (after a docstring)."""
    end = 1 if body and _is_docstring(body[0]) else 0
    for i, stmt in enumerate(body):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            break
        if _is_import(stmt):
            end = i + 1
    return end


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _binds_torch(stmt: cst.BaseStatement) -> bool:
    return _is_import(stmt) and any(
        isinstance(s, cst.Import)
        and any(
            a.asname is None and (_dotted(a.name) or "").split(".")[0] == "torch" for a in s.names
        )
        for s in stmt.body  # type: ignore[attr-defined]
    )


def _from_torch(stmt: cst.BaseStatement) -> bool:
    return _is_import(stmt) and any(
        isinstance(s, cst.ImportFrom) and _is_torch(_dotted(s.module) if s.module else "")
        for s in stmt.body  # type: ignore[attr-defined]
    )


def _ensure_torch(module: cst.Module) -> cst.Module:
    body = list(module.body)
    end = _import_end(body)
    if any(_binds_torch(s) for s in body[:end]):
        return module
    at = next((i for i in range(end) if _from_torch(body[i])), end)
    new = cst.SimpleStatementLine([cst.Import([cst.ImportAlias(cst.Name("torch"))])])
    if at < len(body) and at < end:
        new = new.with_changes(leading_lines=body[at].leading_lines)
        body[at] = body[at].with_changes(leading_lines=())
    elif at > 0 and not _is_import(body[at - 1]):
        new = new.with_changes(leading_lines=[BLANK])
    if at == end and at < len(body) and not body[at].leading_lines:
        body[at] = _two_blank(body[at])
    body.insert(at, new)
    return module.with_changes(body=body)


def _two_blank(stmt: cst.BaseStatement) -> cst.BaseStatement:
    """A top-level statement with at least two blank lines above it (PEP 8 after a def)."""
    lines = list(stmt.leading_lines)
    blank = 0
    while blank < len(lines) and lines[blank].comment is None:
        blank += 1
    return stmt.with_changes(leading_lines=[BLANK] * max(0, 2 - blank) + lines)


# ---------------------------------------------------------------------------------------------
# TCD101 leftover-graph-break


def _leftover(spot: _Spot, stmt: cst.SimpleStatementLine, small: cst.BaseSmallStatement) -> Rewrite:
    line = spot.site.line
    rest = [s for s in stmt.body if s is not small]
    if rest:
        rest[-1] = rest[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        module = spot.module.deep_replace(stmt, stmt.with_changes(body=rest))
    else:
        module = _remove(spot, stmt)
    return Rewrite(
        rule=CODES[LEFTOVER],
        family=LEFTOVER,
        safety="safe",
        title=f"delete the torch._dynamo.graph_break() call at line {line}",
        note="graph_break() does nothing in eager: behaviour unchanged, one graph break fewer",
        source=module.code,
        line=line,
        checks=(),
    )


def _remove(spot: _Spot, stmt: cst.BaseStatement) -> cst.Module:
    """The module without `stmt`; its comment lines stay, above the statement that now follows
    them, on the `pass` of an emptied block, or in the block's footer."""
    parent = spot.parents[stmt]
    body = [s for s in parent.body if s is not stmt]  # type: ignore[attr-defined]
    i = next(k for k, s in enumerate(parent.body) if s is stmt)  # type: ignore[attr-defined]
    kept = list(stmt.leading_lines) if any(ln.comment for ln in stmt.leading_lines) else []
    if kept and i < len(body):
        body[i] = body[i].with_changes(leading_lines=[*kept, *body[i].leading_lines])
    elif kept and isinstance(parent, cst.IndentedBlock) and body:
        footer = [*kept, *parent.footer]
        return spot.module.deep_replace(parent, parent.with_changes(body=body, footer=footer))
    return _replace_body(spot, parent, body or [_pass_line(kept)])


# ---------------------------------------------------------------------------------------------
# TCD102 guard-logging


def _guard_logging(spot: _Spot, stmt: cst.SimpleStatementLine, kind: str) -> Rewrite:
    line, word = spot.site.line, REPORT_WORD[kind]
    name = spot.code(stmt.body[0].value.func)  # type: ignore[attr-defined]
    module = _splice(spot, stmt, [_wrap_guard(stmt)])
    return Rewrite(
        rule=CODES[GUARD_LOGGING],
        family=GUARD_LOGGING,
        safety="unsafe",
        title=f"guard the {name}() at line {line} with `if {GUARD}:`",
        note=f"compiled runs skip the {word}: eager output unchanged",
        source=_finish(module),
        line=line,
        checks=(kind,),
    )


# ---------------------------------------------------------------------------------------------
# TCD103 guard-check


def _guard_check(
    spot: _Spot, top: cst.If, smalls: list, compound: list, kinds: list
) -> Rewrite | NoRewrite:
    line = spot.site.line
    other = compound or [s for s, k in zip(smalls, kinds) if k is None and not _is_pass(s)]
    if other:
        what = spot.code(other[0]).splitlines()[0][:50]
        return NoRewrite(
            f"the if at line {line} does more than report (`{what}`): skipping it in compiled "
            "runs would change results",
            GUARD_CHECK,
        )
    checks = tuple(c for c in CHECK_ORDER if c in kinds)
    if top.orelse is None:
        module = spot.module.deep_replace(top, top.with_changes(test=_guarded_test(top.test)))
        how = f"test `{GUARD} and (...)`"
    else:
        module = _splice(spot, top, [_wrap_guard(top)])
        how = f"whole if/else under `if {GUARD}:`"
    reports = " and ".join(dict.fromkeys(REPORT_WORD[c] for c in checks))
    return Rewrite(
        rule=CODES[GUARD_CHECK],
        family=GUARD_CHECK,
        safety="unsafe",
        title=f"skip the check at line {spot.line_of(top)} in compiled runs: {how}",
        note=f"compiled runs skip the check and its {reports}: eager output unchanged",
        source=_finish(module),
        line=line,
        checks=checks,
    )


def _is_pass(small: cst.BaseSmallStatement) -> bool:
    return isinstance(small, cst.Pass)


def _guarded_test(test: cst.BaseExpression) -> cst.BaseExpression:
    loose = (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)
    if isinstance(test, loose) and not test.lpar:
        test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.BooleanOperation(left=cst.parse_expression(GUARD), operator=cst.And(), right=test)


# ---------------------------------------------------------------------------------------------
# TCD104 tensor-cond


@dataclass
class _Branch:
    lines: list[cst.SimpleStatementLine]
    names: set[str]
    header: cst.TrailingWhitespace | None
    span: list[int] | None
    aliases: frozenset[str] = frozenset()  # names whose last value is another name: `y = x`


def _tensor_cond(spot: _Spot, stmt: cst.If) -> Rewrite | NoRewrite:
    func = spot.func()
    problem = _cond_problem(spot, stmt, func)
    if problem:
        return NoRewrite(problem, TENSOR_COND)
    true = _branch(spot, stmt.body, "if")
    false = _branch(spot, stmt.orelse.body if stmt.orelse else None, "else")
    for b in (true, false):
        if isinstance(b, str):
            return NoRewrite(b, TENSOR_COND)
    assert isinstance(true, _Branch) and isinstance(false, _Branch) and func is not None
    outputs = sorted(true.names | false.names)
    if not outputs:
        return NoRewrite(
            "neither branch assigns a name: torch.cond has nothing to return", TENSOR_COND
        )
    bound = _bound(spot, func, before=spot.line_of(stmt))
    for name in outputs:
        if (name not in true.names or name not in false.names) and name not in bound:
            side = "if" if name in true.names else "else"
            return NoRewrite(
                f"{name} is assigned only in the {side} branch and is not bound before the if: "
                "torch.cond needs the same outputs from both branches",
                TENSOR_COND,
            )
    operands = [n for n in outputs if n in bound]
    return _cond_rewrite(spot, stmt, func, true, false, outputs, operands)


def _cond_problem(spot: _Spot, stmt: cst.If, func: cst.FunctionDef | None) -> str | None:
    line = spot.site.line
    if func is None:
        return f"the if at line {line} is not inside a function: torch.cond branches are functions"
    if isinstance(stmt.orelse, cst.If) or _chain_top(spot, stmt) is not stmt:
        return f"the if at line {line} is part of an elif chain: torch.cond takes two branches"
    if isinstance(stmt.test, cst.BooleanOperation):
        return (
            f"the test at line {line} combines conditions with and/or: torch.cond needs one "
            "tensor predicate (combine them with & or | by hand)"
        )
    if any(isinstance(n, cst.NamedExpr) for n in _walk(stmt.test)):
        return f"the test at line {line} assigns with :=: torch.cond's predicate must be pure"
    return None


def _branch(spot: _Spot, suite: cst.BaseSuite | None, label: str) -> _Branch | str:
    """A branch's assignment lines and the names they bind, or what stops torch.cond."""
    if suite is None:
        return _Branch([], set(), None, None)
    smalls, compound = _small_statements(suite)
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
        lines = [cst.SimpleStatementLine([s]) for s in smalls if not _is_pass(s)]
        header, first, last = None, spot.line_of(suite), spot.line_of(suite)
    else:
        lines = [ln for ln in suite.body if not all(_is_pass(s) for s in ln.body)]  # type: ignore[union-attr]
        header, first, last = suite.header, spot.line_of(suite.body[0]), spot.pos[suite].end.line
    return _Branch([_unsemi(ln) for ln in lines], names, header, [first, last], frozenset(aliases))


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
        return [n for t in small.targets for n in _names_in_target(t.target)]
    if isinstance(small, cst.AnnAssign):
        return _names_in_target(small.target)
    return []


def _assign_problem(spot: _Spot, small: cst.BaseSmallStatement, label: str) -> str | None:
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


def _cond_rewrite(
    spot: _Spot,
    stmt: cst.If,
    func: cst.FunctionDef,
    true: _Branch,
    false: _Branch,
    outputs: list[str],
    operands: list[str],
) -> Rewrite:
    line = spot.line_of(stmt)
    names = (f"_tcd_true_{line}", f"_tcd_false_{line}")
    defs = [
        _branch_def(name, branch, outputs, operands) for name, branch in zip(names, (true, false))
    ]
    defs[0] = defs[0].with_changes(leading_lines=_blank_above(spot, stmt))
    pred = _predicate(stmt.test)
    call = _cond_call(pred, names, outputs, operands)
    module = _splice(spot, stmt, [*defs, call])
    pred_code = cst.Module([]).code_for_node(pred)
    fresh = (true.names - true.aliases) & (false.names - false.aliases)
    passed = [n for n in outputs if n not in fresh]
    note = (
        "torch.cond traces both branches, which must give tensors of the same shape and dtype; "
        f"outputs: {', '.join(outputs)}; the proof runs inputs that take each branch"
    )
    if passed:
        note += (
            f"; a branch that leaves {', '.join(passed)} unchanged or binds another name to it "
            "returns a clone (torch.cond forbids an output aliasing an input)"
        )
    return Rewrite(
        rule=CODES[TENSOR_COND],
        family=TENSOR_COND,
        safety="unsafe",
        title=f"turn the if at line {line} into torch.cond({pred_code}, ...)",
        note=note,
        source=_finish(module),
        line=spot.site.line,
        checks=("branches",),
        branch={
            "predicate": spot.code(stmt.test),
            "function": func.name.value,
            "true_lines": true.span,
            "false_lines": false.span,
        },
    )


def _blank_above(spot: _Spot, stmt: cst.If) -> list[cst.EmptyLine]:
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
    return call.visit(_Substitute("__tcd_pred__", pred))  # type: ignore[return-value]


class _Substitute(cst.CSTTransformer):
    def __init__(self, name: str, node: cst.BaseExpression) -> None:
        self.name, self.node = name, node

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.node if original.value == self.name else updated


class _DropItem(cst.CSTTransformer):
    """`x.item()` -> `x`: a 0-dim tensor compares to a bool tensor, which torch.cond takes."""

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not updated.args:
            return func.value
        return updated


def _predicate(test: cst.BaseExpression) -> cst.BaseExpression:
    pred = test.visit(_DropItem())
    if isinstance(pred, cst.UnaryOperation) and isinstance(pred.operator, cst.Not):
        inner = pred.expression
        return cst.Call(cst.parse_expression("torch.logical_not"), [cst.Arg(inner)])
    return pred  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# TCD105 custom-op


@dataclass
class _OpCall:
    stmt: cst.SimpleStatementLine
    assign: cst.Assign
    library: str
    function: str
    target: str
    inputs: list[str]
    detached: set[str]


def _op_candidate(spot: _Spot) -> _OpCall | NoRewrite | None:
    """An assignment whose value calls another imported library (None: not this family)."""
    stmt = spot.stmt
    assert isinstance(stmt, cst.SimpleStatementLine)
    assigns = [s for s in stmt.body if isinstance(s, cst.Assign)]
    library = next((lib for a in assigns if (lib := _library_called(spot, a.value))), None)
    if library is None:
        return None
    if len(stmt.body) > 1:
        return _several(spot, CUSTOM_OP)
    assign = assigns[0]
    line = spot.site.line
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        what = spot.code(assign.targets[0].target)
        return NoRewrite(
            f"the {library} call's result at line {line} goes to `{what}`: bind it to one local "
            "name first",
            CUSTOM_OP,
        )
    funcs = spot.funcs()
    if not funcs:
        return NoRewrite(f"the {library} call at line {line} is not inside a function", CUSTOM_OP)
    return _op_inputs(spot, stmt, assign, library, funcs)


def _library_called(spot: _Spot, value: cst.BaseExpression) -> str | None:
    """The first non-torch library an expression calls into (by its imported module's root)."""
    for call in _calls(value):
        root = _root(call.func)
        full = spot.imports.get(root, "") if root else ""
        if full and not _is_torch(full) and _top_level_binds(spot.module, root):  # type: ignore[arg-type]
            return full.split(".")[0]
    return None


def _top_level_binds(module: cst.Module, name: str) -> bool:
    visitor = _ImportMap()
    for stmt in module.body:
        if _is_import(stmt):
            stmt.visit(visitor)
    return name in visitor.names


def _op_inputs(
    spot: _Spot,
    stmt: cst.SimpleStatementLine,
    assign: cst.Assign,
    library: str,
    funcs: list[cst.FunctionDef],
) -> _OpCall | NoRewrite:
    line = spot.site.line
    local = set().union(*(_bound(spot, f) for f in funcs))
    reads = _Reads()
    assign.value.visit(reads)
    inputs = [n for n in reads.names if n in local]
    if "self" in inputs:
        return NoRewrite(
            f"the {library} call at line {line} reads self: a custom op takes tensors and numbers; "
            "bind what it needs to locals first",
            CUSTOM_OP,
        )
    attrs = [a for a in reads.attrs if a.value.value in inputs]  # type: ignore[attr-defined]
    if attrs:
        return NoRewrite(
            f"the {library} call at line {line} reads `{spot.code(attrs[0])}`: a custom op takes "
            "tensors and numbers; bind the attribute to a local first",
            CUSTOM_OP,
        )
    target = assign.targets[0].target.value  # type: ignore[attr-defined]
    detached = {n for n in inputs if _only_detached(assign.value, n)}
    return _OpCall(stmt, assign, library, funcs[0].name.value, target, inputs, detached)


def _only_detached(value: cst.BaseExpression, name: str) -> bool:
    """Whether every read of `name` is `name.detach()` or `name.numpy()`: no gradient flows."""
    uses = [n for n in _walk(value) if isinstance(n, cst.Name) and n.value == name]
    called = [
        c.func.value
        for c in _calls(value)
        if isinstance(c.func, cst.Attribute)
        and c.func.attr.value in ("detach", "numpy")
        and isinstance(c.func.value, cst.Name)
        and c.func.value.value == name
    ]
    return bool(uses) and len(called) == len(uses)


def _custom_op(spot: _Spot, op: _OpCall, observed: dict | None) -> Rewrite | NoRewrite:
    if not observed:
        return NoRewrite("needs the eager run's shapes", CUSTOM_OP)
    types = _observed_types(op, observed)
    if isinstance(types, NoRewrite):
        return types
    line = spot.line_of(op.stmt)
    fn = f"_tcd_op_l{line}"
    qualname = f"tcdoctor_patch::{_op_name(spot.site.file, op.function, line)}"
    fake, fixed = _fake(op, types, observed)
    defs = _op_defs(fn, qualname, op, types, fake)
    args = [f"{n}.detach()" if n in op.detached else n for n in op.inputs]
    call = cst.parse_expression(f"{fn}({', '.join(args)})")
    module = spot.module.deep_replace(op.assign, op.assign.with_changes(value=call))
    module = _insert_top(_ensure_torch(module), defs)
    note = "no gradient flows through the op; a gradient through it needs register_autograd"
    if op.detached:
        detached = ", ".join(f"{n}.detach()" for n in op.inputs if n in op.detached)
        note = f"no gradient flows through the op, as in the original (the call passes {detached})"
    if fixed:
        note += f"; fake: fixed shape {fixed} as observed; another input shape would need a shape function"
    return Rewrite(
        rule=CODES[CUSTOM_OP],
        family=CUSTOM_OP,
        safety="unsafe",
        title=f"wrap the {op.library} call at line {line} in the custom op {qualname}",
        note=note,
        source=module.code,
        line=spot.site.line,
        checks=("opcheck",),
        op={"qualname": qualname, "function": fn, "inputs": list(op.inputs)},
    )


def _observed_types(op: _OpCall, observed: dict) -> dict[str, str] | NoRewrite:
    """Each input's annotation (`torch.Tensor`, `int`, ...) from the observed eager run."""
    seen, out = observed.get("inputs") or {}, observed.get("output") or {}
    if out.get("type") != "tensor":
        return NoRewrite(
            f"the call returns {out.get('type') or 'an unobserved value'}, not a tensor: a custom "
            "op must return tensors (convert the result with torch.from_numpy in the source first)",
            CUSTOM_OP,
        )
    if not _known_dtype(out):
        return NoRewrite("the output's observed dtype is not a torch dtype name", CUSTOM_OP)
    types: dict[str, str] = {}
    for name in op.inputs:
        kind = (seen.get(name) or {}).get("type")
        if kind == "tensor" and not _known_dtype(seen[name]):
            return NoRewrite(f"input {name}'s observed dtype is not a torch dtype name", CUSTOM_OP)
        if kind == "tensor":
            types[name] = "torch.Tensor"
        elif kind in OBSERVED_SCALARS:
            types[name] = OBSERVED_SCALARS[kind]
        else:
            return NoRewrite(
                f"input {name} is {kind or 'not observed'}: a custom op takes tensors, ints, floats "
                "and bools",
                CUSTOM_OP,
            )
    return types


def _op_name(file: str | None, function: str, line: int) -> str:
    stem = PurePath(file).name.split(".")[0] if file else "module"
    name = re.sub(r"\W", "_", f"{stem}_{function}_l{line}", flags=re.ASCII)
    return name if name[0].isalpha() else f"m_{name}"


def _known_dtype(observed: dict) -> bool:
    return bool(re.fullmatch(r"(torch\.)?[a-z][a-z0-9_]*", str(observed.get("dtype", ""))))


def _dtype(observed: dict) -> str:
    """`torch.float32` from an observed "float32" (or "torch.float32")."""
    return "torch." + str(observed["dtype"]).removeprefix("torch.")


def _fake(op: _OpCall, types: dict[str, str], observed: dict) -> tuple[str, str | None]:
    """The fake's return expression, and the fixed shape it assumes (None: it follows an input)."""
    output, seen = observed["output"], observed["inputs"]
    tensors = [n for n in op.inputs if types[n] == "torch.Tensor"]
    shape = [int(d) for d in output.get("shape", ())]
    for name in tensors:
        same_shape = [int(d) for d in seen[name].get("shape", ())] == shape
        if same_shape and _dtype(seen[name]) == _dtype(output):
            return f"torch.empty_like({name})", None
    fixed = f"({shape[0]},)" if len(shape) == 1 else f"({', '.join(map(str, shape))})"
    base = f"{tensors[0]}.new_empty" if tensors else "torch.empty"
    return f"{base}({fixed}, dtype={_dtype(output)})", fixed


def _op_defs(
    fn: str, qualname: str, op: _OpCall, types: dict[str, str], fake: str
) -> list[cst.BaseStatement]:
    params = ", ".join(f"{n}: {types[n]}" for n in op.inputs)
    text = (
        f'@torch.library.custom_op("{qualname}", mutates_args=())\n'
        f"def {fn}({params}) -> torch.Tensor:\n"
        "    return __tcd_expr__\n"
        "\n"
        "\n"
        f"@{fn}.register_fake\n"
        f"def _({', '.join(op.inputs)}):\n"
        f"    return {fake}\n"
    )
    defs = list(cst.parse_module(text).body)
    defs[0] = defs[0].visit(_Substitute("__tcd_expr__", op.assign.value))  # type: ignore[assignment]
    return [d.with_changes(leading_lines=[BLANK, BLANK]) for d in defs]


def _insert_top(module: cst.Module, defs: list[cst.BaseStatement]) -> cst.Module:
    body = list(module.body)
    at = _import_end(body)
    if at < len(body):
        body[at] = _two_blank(body[at])
    body[at:at] = defs
    return module.with_changes(body=body)
