"""The CST toolkit every rule uses (torch-free): locate the statement at a break's line, resolve
names through the imports and the enclosing scopes, read what a function binds and an expression
reads, and splice statements into the tree.

Method. The file is parsed with libcst, whose tree keeps every comment and blank line (and the
file's line endings: a CRLF file's new lines are CRLF too), and `MetadataWrapper` +
`PositionProvider` map the line to its statement: the innermost statement whose range holds the
line, or for a compound statement the one whose header holds it. `Spot` carries the parsed module,
the statement, positions, parents and the module's imports; a rule reads and edits through it.

Pitfalls:
- PyTorch may report an inner line of a multi-line statement: the statement holding the line is
  the one rewritten (names and titles use its first line).
- libcst's `MetadataWrapper` copies the module: edits go to `wrapper.module`, whose nodes the
  metadata maps; continuation lines inside brackets are indented relative to their block, so a
  wrapped multi-line call moves with its block.
- A name is what the scopes around the statement bind it to: `graph_break` imported from the
  user's own module, or a local `print = ...`, is not PyTorch's or the builtin (`resolve`).
- A UTF-8 byte-order mark is not Python: it is taken off before parsing and put back on the
  rewritten text (`split_bom`), so line 1 is not rewritten by the diff.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, ParentNodeProvider, PositionProvider

from .base import NoRewrite, Site

BLANK = cst.EmptyLine(indent=False)
BOM = "\ufeff"
GUARD = "not torch.compiler.is_compiling()"


@dataclass
class Spot:
    """The parsed module and the statement at the break site."""

    site: Site
    module: cst.Module
    pos: Mapping[cst.CSTNode, CodeRange]
    parents: Mapping[cst.CSTNode, cst.CSTNode]
    stmt: cst.BaseStatement
    imports: dict[str, str]
    lines: list[str]

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

    def klass(self) -> cst.ClassDef | None:
        """The class whose method holds the statement (None outside a method)."""
        node = self.parents.get(self.stmt)
        while node is not None and not isinstance(node, cst.ClassDef):
            node = self.parents.get(node)
        return node

    def head(self) -> str:
        return self.code(self.stmt).splitlines()[0][:60]


def split_bom(source: str) -> tuple[str, str]:
    """(the byte-order mark or "", the text after it)."""
    return (BOM, source[1:]) if source.startswith(BOM) else ("", source)


def lines_of(text: str) -> list[str]:
    """Lines split at \\n only, as patch tools count them (str.splitlines also splits at \\f, \\r)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


# ---------------------------------------------------------------------------------------------
# locating the statement


def locate(source: str, site: Site) -> Spot | NoRewrite:
    """The statement at `site.line` of `source` (no BOM), or why there is none."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
        return NoRewrite(f"the file does not parse ({first}): no patch for a file Python rejects")
    lines = lines_of(source)
    if not 1 <= site.line <= len(lines):
        return NoRewrite(f"line {site.line} is outside the file ({len(lines)} lines)")
    text = lines[site.line - 1].strip()
    if not text or text.startswith("#"):
        return NoRewrite(f"line {site.line} holds no statement (blank or a comment)")
    wrapper = MetadataWrapper(module)
    pos = wrapper.resolve(PositionProvider)
    stmt = statement_at(pos, site.line)
    if stmt is None:
        return NoRewrite(f"line {site.line} holds no statement (`{text[:60]}`)")
    parents = wrapper.resolve(ParentNodeProvider)
    return Spot(site, wrapper.module, pos, parents, stmt, imports(wrapper.module), lines)


def statement_at(pos: Mapping[cst.CSTNode, CodeRange], line: int) -> cst.BaseStatement | None:
    """The innermost statement whose range (a compound statement: its header) holds `line`."""
    found = [
        node
        for node, where in pos.items()
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        and where.start.line <= line <= last_line(node, where, pos)
    ]
    return max(found, key=lambda n: (pos[n].start.line, -pos[n].end.line), default=None)


def last_line(node: cst.CSTNode, where: CodeRange, pos: Mapping[cst.CSTNode, CodeRange]) -> int:
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


def header_lines(spot: Spot, stmt: cst.BaseStatement | None = None) -> range:
    """The lines a statement's header spans (a simple statement: all of its lines)."""
    stmt = spot.stmt if stmt is None else stmt
    where = spot.pos[stmt]
    return range(where.start.line, last_line(stmt, where, spot.pos) + 1)


# ---------------------------------------------------------------------------------------------
# imports and names


class _ImportMap(cst.CSTVisitor):
    """Local name -> dotted name it is bound to by an import."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.names[alias.asname.name.value] = full
            else:
                self.names[full.split(".")[0]] = full.split(".")[0]

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = dotted(node.module) or ""
        for alias in node.names:
            name = dotted(alias.name) or ""
            local = alias.asname.name.value if alias.asname else name  # type: ignore[union-attr]
            self.names[local] = f"{base}.{name}"


def imports(module: cst.Module) -> dict[str, str]:
    """Every import anywhere in the module: local name -> the dotted name it binds."""
    visitor = _ImportMap()
    module.visit(visitor)
    return visitor.names


def top_level_imports(module: cst.Module) -> dict[str, str]:
    visitor = _ImportMap()
    for stmt in module.body:
        if is_import(stmt):
            stmt.visit(visitor)
    return visitor.names


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a chain of names, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr.value}" if head else None
    return None


def root(node: cst.BaseExpression) -> str | None:
    """The name an expression chain starts from: `a` in `a.b(c)[0].d`."""
    while isinstance(node, (cst.Attribute, cst.Call, cst.Subscript)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None


def is_torch(full: str) -> bool:
    return full == "torch" or full.startswith("torch.")


def local_names(spot: Spot) -> set[str]:
    """Names the functions around the statement bind (parameters, assignments, defs, imports)."""
    return set().union(*(bound(spot, f) for f in spot.funcs())) if spot.funcs() else set()


def module_binds(spot: Spot, name: str) -> list[cst.CSTNode]:
    """The module-level statements that bind `name` other than imports (assignments, defs)."""
    out: list[cst.CSTNode] = []
    for stmt in spot.module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value == name:
            out.append(stmt)
        elif isinstance(stmt, cst.SimpleStatementLine) and not is_import(stmt):
            if name in targets_of(stmt):
                out.append(stmt)
        elif isinstance(stmt, cst.BaseCompoundStatement) and not isinstance(
            stmt, (cst.FunctionDef, cst.ClassDef)
        ):
            visitor = _Bindings()
            stmt.visit(visitor)
            if name in {n.value for n in visitor.found}:
                out.append(stmt)
    return out


def resolve(spot: Spot, expr: cst.BaseExpression) -> str | None:
    """The dotted name `expr` (a chain of names) refers to through the imports: `torch._dynamo.
    graph_break` for `graph_break` imported from torch._dynamo; a builtin's own name (`print`)
    when nothing binds it; None when a local or module-level binding other than an import
    decides what it is (a parameter, an assignment, a def)."""
    name = dotted(expr)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    if head in local_names(spot) and head not in _function_imports(spot):
        return None
    if module_binds(spot, head):
        return None
    full = spot.imports.get(head, head)
    return f"{full}.{rest}" if rest else full


def _function_imports(spot: Spot) -> set[str]:
    out: set[str] = set()
    for f in spot.funcs():
        visitor = _ImportMap()
        f.body.visit(visitor)
        out |= set(visitor.names)
    return out


# ---------------------------------------------------------------------------------------------
# walking, calls, bindings, reads


def walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class _All(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            found.append(n)
            return True

    node.visit(_All())
    return found


def calls(node: cst.CSTNode) -> list[cst.Call]:
    return [n for n in walk(node) if isinstance(n, cst.Call)]


def method_calls(node: cst.CSTNode, method: str) -> list[cst.Call]:
    return [
        c
        for c in calls(node)
        if isinstance(c.func, cst.Attribute) and c.func.attr.value == method and not c.args
    ]


def names_in_target(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in names_in_target(el.value)]
    if isinstance(target, cst.StarredElement):
        return names_in_target(target.value)
    return []


class _Bindings(cst.CSTVisitor):
    """Names a function body binds (not inside nested functions, classes or comprehensions)."""

    def __init__(self) -> None:
        self.found: list[cst.Name] = []

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.found += names_in_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.found += names_in_target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.found += names_in_target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self.found += names_in_target(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.found += names_in_target(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self.found += names_in_target(node.name)  # type: ignore[arg-type]

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            if alias.asname is None:
                head = (dotted(alias.name) or "").split(".")[0]
                self.found.append(cst.Name(head))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            if alias.asname is None and isinstance(alias.name, cst.Name):
                self.found.append(alias.name)

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


def params(func: cst.FunctionDef) -> list[str]:
    p = func.params
    every = [*p.posonly_params, *p.params, *p.kwonly_params]
    every += [s for s in (p.star_arg, p.star_kwarg) if isinstance(s, cst.Param)]
    return [param.name.value for param in every]


def bound(spot: Spot, func: cst.FunctionDef, before: int | None = None) -> set[str]:
    """A function's parameters and the names its body binds (on lines before `before`)."""
    visitor = _Bindings()
    func.body.visit(visitor)
    names = {
        n.value
        for n in visitor.found
        if before is None or (n in spot.pos and spot.line_of(n) < before)
    }
    return names | set(params(func))


def targets_of(stmt: cst.CSTNode) -> set[str]:
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


def reads(node: cst.CSTNode) -> list[str]:
    visitor = _Reads()
    node.visit(visitor)
    return visitor.names


def attribute_reads(node: cst.CSTNode) -> list[cst.Attribute]:
    """`a.b` read off a name other than to call it, in order."""
    visitor = _Reads()
    node.visit(visitor)
    return visitor.attrs


def is_constant(node: cst.CSTNode) -> bool:
    """A literal: numbers, strings (an f-string without fields), True/False/None, and tuples,
    lists or negations of them."""
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.FormattedString):
        return all(isinstance(p, cst.FormattedStringText) for p in node.parts)
    if isinstance(node, cst.ConcatenatedString):
        return is_constant(node.left) and is_constant(node.right)
    if isinstance(node, cst.UnaryOperation):
        return is_constant(node.expression)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(is_constant(e.value) for e in node.elements)
    return False


# ---------------------------------------------------------------------------------------------
# editing the tree


class Substitute(cst.CSTTransformer):
    """Every `Name(name)` replaced by `node`."""

    def __init__(self, name: str, node: cst.BaseExpression) -> None:
        self.name, self.node = name, node

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.node if original.value == self.name else updated


class ReplaceNodes(cst.CSTTransformer):
    """Given nodes (matched by identity in the original tree) replaced by new expressions."""

    def __init__(self, new: Mapping[cst.CSTNode, cst.BaseExpression]) -> None:
        self.new = {id(k): v for k, v in new.items()}

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
        return self.new.get(id(original), updated)  # type: ignore[return-value]


def pass_line(leading: Sequence[cst.EmptyLine] = ()) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Pass()], leading_lines=leading)


def splice(spot: Spot, old: cst.BaseStatement, new: Sequence[cst.BaseStatement]) -> cst.Module:
    """The module with statement `old` replaced by the statements `new` in its block."""
    parent = spot.parents[old]
    body = list(parent.body)  # type: ignore[attr-defined]
    i = next(k for k, s in enumerate(body) if s is old)
    body[i : i + 1] = new
    return replace_body(spot, parent, body)


def replace_body(spot: Spot, parent: cst.CSTNode, body: list) -> cst.Module:
    if isinstance(parent, cst.Module):
        return spot.module.with_changes(body=body)
    return spot.module.deep_replace(parent, parent.with_changes(body=body))


def wrap_guard(stmt: cst.BaseStatement) -> cst.If:
    """`if not torch.compiler.is_compiling():` around a statement, its comments kept above."""
    return cst.If(
        test=cst.parse_expression(GUARD),
        body=cst.IndentedBlock([stmt.with_changes(leading_lines=())]),
        leading_lines=stmt.leading_lines,
    )


def remove(spot: Spot, stmt: cst.BaseStatement) -> cst.Module:
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
    return replace_body(spot, parent, body or [pass_line(kept)])


def finish(module: cst.Module) -> str:
    """The module's code, with `import torch` added when the file does not bind `torch`."""
    return ensure_torch(module).code


def is_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def import_end(body: Sequence[cst.BaseStatement]) -> int:
    """Index after the last top-level import before the first def or class (after a docstring)."""
    end = 1 if body and is_docstring(body[0]) else 0
    for i, stmt in enumerate(body):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            break
        if is_import(stmt):
            end = i + 1
    return end


def is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _binds_torch(stmt: cst.BaseStatement) -> bool:
    return is_import(stmt) and any(
        isinstance(s, cst.Import)
        and any(
            a.asname is None and (dotted(a.name) or "").split(".")[0] == "torch" for a in s.names
        )
        for s in stmt.body  # type: ignore[attr-defined]
    )


def _from_torch(stmt: cst.BaseStatement) -> bool:
    return is_import(stmt) and any(
        isinstance(s, cst.ImportFrom) and is_torch(dotted(s.module) if s.module else "")
        for s in stmt.body  # type: ignore[attr-defined]
    )


def ensure_torch(module: cst.Module) -> cst.Module:
    body = list(module.body)
    end = import_end(body)
    if any(_binds_torch(s) for s in body[:end]):
        return module
    at = next((i for i in range(end) if _from_torch(body[i])), end)
    new = cst.SimpleStatementLine([cst.Import([cst.ImportAlias(cst.Name("torch"))])])
    if at < len(body) and at < end:
        new = new.with_changes(leading_lines=body[at].leading_lines)
        body[at] = body[at].with_changes(leading_lines=())
    elif at > 0 and not is_import(body[at - 1]):
        new = new.with_changes(leading_lines=[BLANK])
    if at == end and at < len(body) and not body[at].leading_lines:
        body[at] = two_blank(body[at])
    body.insert(at, new)
    return module.with_changes(body=body)


def two_blank(stmt: cst.BaseStatement) -> cst.BaseStatement:
    """A top-level statement with at least two blank lines above it (PEP 8 after a def)."""
    lines = list(stmt.leading_lines)
    blank = 0
    while blank < len(lines) and lines[blank].comment is None:
        blank += 1
    return stmt.with_changes(leading_lines=[BLANK] * max(0, 2 - blank) + lines)


def insert_top(module: cst.Module, defs: list[cst.BaseStatement]) -> cst.Module:
    """`defs` after the module's imports, two blank lines around them."""
    body = list(module.body)
    at = import_end(body)
    if at < len(body):
        body[at] = two_blank(body[at])
    body[at:at] = defs
    return module.with_changes(body=body)


def statement(text: str) -> cst.BaseStatement:
    """One statement parsed from `text` (a trailing newline is added)."""
    return cst.parse_statement(text if text.endswith("\n") else text + "\n")


# ---------------------------------------------------------------------------------------------
# if statements on a tensor

# gb_types of a jump on a tensor's value (an `if` whose test reads a tensor)
TENSOR_JUMP = re.compile(r"generic_jump|data[- ]dependent|\.item\(\)|branch", re.IGNORECASE)


def tensor_if(spot: Spot) -> bool:
    """The statement is an `if` whose test reads a tensor's value: `.item()` in the test, or a
    gb_type of a jump on a tensor."""
    stmt = spot.stmt
    return isinstance(stmt, cst.If) and bool(
        method_calls(stmt.test, "item") or TENSOR_JUMP.search(spot.site.gb_type)
    )


def chain_top(spot: Spot, stmt: cst.If) -> cst.If:
    """The first `if` of an if/elif chain holding `stmt`."""
    parent = spot.parents.get(stmt)
    while isinstance(parent, cst.If) and parent.orelse is stmt:
        stmt, parent = parent, spot.parents.get(parent)
    return stmt


def chain_tests(top: cst.If) -> list[cst.BaseExpression]:
    """The tests of an if/elif chain, in order."""
    out = [top.test]
    if isinstance(top.orelse, cst.If):
        out += chain_tests(top.orelse)
    return out


def suites(top: cst.If) -> list[cst.BaseSuite]:
    """Every body of an if/elif/else chain."""
    out: list[cst.BaseSuite] = [top.body]
    if isinstance(top.orelse, cst.If):
        out += suites(top.orelse)
    elif isinstance(top.orelse, cst.Else):
        out.append(top.orelse.body)
    return out


def small_statements(suite: cst.BaseSuite) -> tuple[list, list]:
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


def branch_statements(top: cst.If) -> tuple[list, list]:
    smalls, compound = [], []
    for suite in suites(top):
        s, c = small_statements(suite)
        smalls += s
        compound += c
    return smalls, compound
