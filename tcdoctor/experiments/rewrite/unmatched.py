"""Why no rule matched a break (torch-free): a reason naming what stops a mechanical patch.

A `.tolist()` or `.numpy()` whose values drive a Python loop or branch, a `.item()` leaving the
graph, or any other statement: the report lists the break under "not tried" with this reason.
"""

from __future__ import annotations

import libcst as cst

from . import tree
from .base import NoRewrite
from .tree import Spot


def reason(spot: Spot) -> NoRewrite:
    stmt, line, gb = spot.stmt, spot.site.line, spot.site.gb_type
    if tree.method_calls(stmt, "tolist"):
        return NoRewrite(
            f"the list from .tolist() at line {line} {_feeds(spot)}: no mechanical rewrite keeps "
            "the computation; rewrite it with tensor ops by hand"
        )
    if tree.method_calls(stmt, "numpy"):
        return NoRewrite(
            f"the array from .numpy() at line {line} {_feeds(spot)}: no mechanical rewrite keeps "
            "the computation; keep it in torch ops, or wrap it in a custom op by hand"
        )
    if tree.method_calls(stmt, "item"):
        return NoRewrite(
            f"the Python number from .item() at line {line} leaves the graph: keep it a 0-dim "
            "tensor by hand, or set torch._dynamo.config.capture_scalar_outputs = True "
            "(process-wide)"
        )
    what = type(stmt).__name__ if not isinstance(stmt, cst.SimpleStatementLine) else "statement"
    gb = gb or "a graph break"
    return NoRewrite(f'no mechanical patch for "{gb}" at line {line} ({what} `{spot.head()}`)')


def _feeds(spot: Spot) -> str:
    """How the value a statement binds is used later in its function: loop, branch, or Python."""
    stmt = spot.stmt
    if isinstance(stmt, cst.For):
        return "drives a Python loop"
    names = tree.targets_of(stmt) if isinstance(stmt, cst.SimpleStatementLine) else set()
    func = spot.func()
    if not names or func is None:
        return "leaves the graph as Python values"
    line = spot.line_of(stmt)
    for node in tree.walk(func.body):
        if isinstance(node, (cst.For, cst.While, cst.If)) and spot.line_of(node) > line:
            header = node.iter if isinstance(node, cst.For) else node.test
            if names & set(tree.reads(header)):
                kind = "branch" if isinstance(node, cst.If) else "loop"
                return f"drives a Python {kind} (line {spot.line_of(node)})"
    return "leaves the graph as Python values"
