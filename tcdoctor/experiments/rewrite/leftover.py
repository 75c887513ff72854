"""TCD101 leftover-graph-break: `torch._dynamo.graph_break()` left from debugging, deleted.

Applies to a simple statement calling `torch._dynamo.graph_break`, resolved through the imports
(`from torch._dynamo import graph_break` counts; a `graph_break` of the user's own module, or a
local name, does not). graph_break() does nothing in eager, so deleting it is safe when it has no
arguments or constant ones. Its arguments are walked (effects.py): pure ones are dropped with it
(unsafe: the walk's pure list is a judgement); an effect they hold (`msg=f"step {next(it)}"`) is
kept as a statement of its own where hoisting it is exact and compiles, else the patch is refused
with the call named. An emptied block gets `pass`; comment lines above the call stay.
"""

from __future__ import annotations

import libcst as cst

from ...outcomes import Safety
from . import effects, tree
from .base import NoRewrite, Observed, Page, Result, Rewrite, Rule
from .tree import Spot

CODE, NAME = "TCD101", "leftover-graph-break"
GRAPH_BREAK = "torch._dynamo.graph_break"


def _graph_break(spot: Spot, small: cst.BaseSmallStatement) -> tuple[cst.Call | None, str | None]:
    """(the call, None) for a call of torch._dynamo.graph_break; (None, why) for a call named
    graph_break that resolves elsewhere; (None, None) for anything else."""
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return None, None
    name = tree.dotted(small.value.func)
    if name is None or name.rpartition(".")[2] != "graph_break":
        return None, None
    full = tree.resolve(spot, small.value.func)
    if full == GRAPH_BREAK:
        return small.value, None
    return None, (
        f"`{name}` at line {spot.site.line} resolves to "
        f"{f'`{full}`' if full else 'a local binding'}, not {GRAPH_BREAK}: not deleted"
    )


def match(spot: Spot, observed: Observed | None) -> Result | None:
    stmt = spot.stmt
    assert isinstance(stmt, cst.SimpleStatementLine)
    for small in stmt.body:
        call, other = _graph_break(spot, small)
        if other:
            return NoRewrite(other, NAME)
        if call is not None:
            return _delete(spot, stmt, small, call)
    return None


def _delete(
    spot: Spot, stmt: cst.SimpleStatementLine, small: cst.BaseSmallStatement, call: cst.Call
) -> Result:
    line = spot.site.line
    found = [e for arg in call.args for e in effects.effects(spot, arg.value)]
    kept: list[cst.BaseSmallStatement] = []
    if found:
        hoisted = effects.hoist(spot, call, found, "the graph_break()'s arguments")
        if isinstance(hoisted, str):
            return NoRewrite(hoisted, NAME)
        kept = [cst.Expr(e.node) for e in found]
        walk, note = (
            Safety.UNSAFE,
            "graph_break() does nothing in eager; the call(s) "
            + ", ".join(f"`{e.text}`" for e in found)
            + " in its arguments have an effect and stay as statements of their own",
        )
    elif all(tree.is_constant(a.value) for a in call.args):
        walk, note = Safety.SAFE, "graph_break() does nothing in eager: behaviour unchanged"
    else:
        walk, note = (
            Safety.UNSAFE,
            "graph_break() does nothing in eager; its arguments are no longer evaluated (the "
            "side-effect walk found no effect in them, but they are not constants)",
        )
    rest = [s for s in stmt.body if s is not small]
    i = next(k for k, s in enumerate(stmt.body) if s is small)
    rest[i:i] = kept
    if rest:
        rest[-1] = rest[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        module = spot.module.deep_replace(stmt, stmt.with_changes(body=rest))
    else:
        module = tree.remove(spot, stmt)
    return Rewrite(
        rule=CODE,
        family=NAME,
        safety=max(RULE.safety, walk),  # the less safe of the two
        title=f"delete the torch._dynamo.graph_break() call at line {line}",
        note=f"{note}, one graph break fewer",
        source=module.code,
        line=line,
        proofs=(),
    )


PAGE = Page(
    rewrites=(
        "a call of torch._dynamo.graph_break() (resolved through the imports) is deleted; an "
        "emptied block gets `pass`, the comments above the call stay"
    ),
    refuses=(
        "a `graph_break` that resolves to another function (the user's own module, a local "
        "name); arguments with an effect that cannot be kept as a statement of their own (it "
        "runs only on some runs, or would break the graph itself). Safe only with no arguments "
        "or constant ones; otherwise unsafe"
    ),
    proof="the breaks counted as PyTorch counts them, eager outputs equal, compiled numerics",
    example=(
        "import torch\n\n\ndef forward(x):\n    h = torch.relu(x)\n"
        "    torch._dynamo.graph_break()\n    return h * 2\n"
    ),
    example_line=6,
    example_gb_type="Call to `torch._dynamo.graph_break()`",
)

RULE = Rule(
    code=CODE,
    name=NAME,
    safety=Safety.SAFE,
    the_break="`torch._dynamo.graph_break()` left from debugging (resolved through the imports)",
    the_rewrite="the call deleted (an emptied block gets `pass`)",
    statements=(cst.SimpleStatementLine,),
    proofs=(),
    match=match,
    page=PAGE,
    checked="—",
    safety_note="unsafe when its arguments are not constants",
)
