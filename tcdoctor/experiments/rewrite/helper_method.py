"""A method read as a module-level helper for TCD106 (torch-free): its `self` attributes become
the op's parameters, and the method calls the op.

Method. Every `self.NAME` the method's body reads (not to call it) becomes a parameter `NAME` of
the op (`self_NAME` when the method already uses that name), in the order first read; its value
is passed at the call: a NumPy attribute (`self.gain = np.linspace(...)`) as a tensor
(`torch.from_numpy(self.gain)`, read back in the op as `gain.numpy()`), a tensor or a Python
number as it is. The op's body is the method's, `self.NAME` replaced. The method keeps its name
and signature and returns the op's call: every caller (`self._gate(h)`) is unchanged.

Refused (the reason is the rule's refusal, and TCD107's fallback may then disable the method):
a method that writes an attribute (`self.count += 1`, `self.hist.append(...)`: an op's inputs
are copies, the write would be lost), calls another method (`self._norm(x)`), or passes `self`
on; a `@staticmethod` or `@classmethod` (a decorator: refused by the rule).

Pitfall: the attribute's kind (NumPy array or not) is read from the eager call, so the op is
written only after that observation; an attribute that is a NumPy array on one call and a number
on another is the workload's to keep consistent (the proof sees each variant).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from . import effects, tree
from .tree import Spot


@dataclass(frozen=True)
class Attrs:
    """The attributes a method reads: (attribute, the op's parameter name), in order."""

    names: tuple[tuple[str, str], ...]

    def param(self, attr: str) -> str:
        return dict(self.names)[attr]

    @property
    def params(self) -> list[str]:
        return [p for _, p in self.names]

    @property
    def keys(self) -> list[str]:
        """The names the eager run observes them by (`self.gain`)."""
        return [f"self.{a}" for a, _ in self.names]


def _self_attr(node: cst.CSTNode) -> str | None:
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return node.attr.value
    return None


def read(spot: Spot, func: cst.FunctionDef) -> Attrs | str:
    """The attributes the method reads, or why it cannot become an op (a write, a method call,
    `self` passed on)."""
    name = func.name.value
    called = {id(c.func) for c in tree.calls(func.body)}
    attr_nodes = {id(n) for n in tree.walk(func.body) if _self_attr(n)}
    for node in tree.walk(func.body):
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)):
            target = node.target
            base = target.value if isinstance(target, cst.Subscript) else target
            if _self_attr(base):
                return f"{name}() writes `{spot.code(target)}`: an op's inputs are copies, the write would be lost"
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            inner = node.func.value
            if _self_attr(inner) and effects.effects(spot, node):
                return f"{name}() calls `{spot.code(node)[:40]}` on an attribute: an op would write a copy"
        if _self_attr(node) and id(node) in called:
            return f"{name}() calls the method `self.{_self_attr(node)}`: an op takes tensors and numbers"
        if isinstance(node, cst.Name) and node.value == "self":
            parent = spot.parents.get(node)
            if not (isinstance(parent, cst.Attribute) and id(parent) in attr_nodes):
                return f"{name}() passes `self` on: an op takes tensors and numbers"
    taken = set(tree.bound(spot, func))
    names: list[tuple[str, str]] = []
    for node in tree.walk(func.body):
        attr = _self_attr(node)
        if attr and attr not in dict(names):
            names.append((attr, attr if attr not in taken else f"self_{attr}"))
    return Attrs(tuple(names))


class _Attributes(cst.CSTTransformer):
    def __init__(self, attrs: Attrs, arrays: set[str]) -> None:
        self.attrs, self.arrays = attrs, arrays

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute
    ) -> cst.BaseExpression:
        attr = _self_attr(original)
        if attr is None:
            return updated
        param = self.attrs.param(attr)
        return cst.parse_expression(f"{param}.numpy()" if attr in self.arrays else param)


def as_function(
    func: cst.FunctionDef, name: str, attrs: Attrs, arrays: set[str]
) -> cst.FunctionDef:
    """The method as a module-level function `name`: `self` dropped, one parameter per attribute
    (NumPy ones, in `arrays`, read back with `.numpy()`), dedented to the module's level."""
    p = func.params
    extra = [cst.Param(cst.Name(n)) for n in attrs.params]
    plain = list(p.params[1:]) if not p.posonly_params else list(p.params)
    posonly = list(p.posonly_params[1:]) if p.posonly_params else []
    if any(q.default is not None for q in [*posonly, *plain]):
        plain = [*plain, *extra]  # defaults first: the attributes go keyword-only
        new = p.with_changes(posonly_params=posonly, params=plain[: len(plain) - len(extra)])
        new = new.with_changes(kwonly_params=[*extra, *p.kwonly_params])
        if new.star_arg is cst.MaybeSentinel.DEFAULT:
            new = new.with_changes(star_arg=cst.ParamStar())
    else:
        new = p.with_changes(posonly_params=posonly, params=[*plain, *extra])
    body = func.body.visit(_Attributes(attrs, arrays))
    return func.with_changes(name=cst.Name(name), params=new, body=body, leading_lines=())


def delegate(func: cst.FunctionDef, op: str, attrs: Attrs, arrays: set[str]) -> cst.FunctionDef:
    """The method's body replaced by the op's call with its own parameters and its attributes
    (a NumPy attribute as `torch.from_numpy(self.NAME)`)."""
    p = func.params
    own = [q.name.value for q in [*p.posonly_params, *p.params][1:]]
    kwonly = [q.name.value for q in p.kwonly_params]
    args = [*own]
    for attr, param in attrs.names:
        value = f"torch.from_numpy(self.{attr})" if attr in arrays else f"self.{attr}"
        args.append(value if not _keyword_attrs(func) else f"{param}={value}")
    args += [f"{k}={k}" for k in kwonly]
    body = list(func.body.body)
    keep = body[:1] if body and tree.is_docstring(body[0]) else []
    call = cst.parse_statement(f"return {op}({', '.join(args)})\n")
    return func.with_changes(body=func.body.with_changes(body=[*keep, call]))


def _keyword_attrs(func: cst.FunctionDef) -> bool:
    p = func.params
    return any(q.default is not None for q in [*p.posonly_params, *p.params])
