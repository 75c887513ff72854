"""TCD102 guard-logging: a print, logging call or warnings.warn wrapped in
`if not torch.compiler.is_compiling():`.

Applies to a simple statement whose call reports: the builtin `print`, `warnings.warn`, a
`logging` function, or a method of a logger bound from `logging.getLogger(...)` (effects.py
resolves the receiver; `tracker.log(...)` is refused with the reason). Under Dynamo
`torch.compiler.is_compiling()` is a constant True, so the guarded call is dropped at trace time;
in eager it is False and the output is unchanged. Unsafe: compiled runs skip the output.

The call's arguments are walked: an effect in them (`print(queue.pop())`) is hoisted before the
guard (`_tcd_15 = queue.pop()`, then `print(_tcd_15)` guarded) where that is exact and compiles,
else the patch is refused with the call named.
"""

from __future__ import annotations

import libcst as cst

from ...outcomes import Safety
from . import effects, tree
from .base import REPORT_PROOF, REPORT_WORD, NoRewrite, Observed, Page, Proof, Result, Rewrite, Rule
from .tree import GUARD, Spot

CODE, NAME = "TCD102", "guard-logging"


def several(spot: Spot, family: str) -> NoRewrite:
    return NoRewrite(
        f"line {spot.site.line} holds several statements (`{spot.code(spot.stmt)[:60]}`): "
        "put the one that breaks on its own line first",
        family,
    )


def match(spot: Spot, observed: Observed | None) -> Result | None:
    stmt = spot.stmt
    assert isinstance(stmt, cst.SimpleStatementLine)
    for small in stmt.body:
        kind, refused = effects.report_kind(spot, small)
        if refused:
            return NoRewrite(refused, NAME)
        if kind is None:
            continue
        if len(stmt.body) > 1:
            return several(spot, NAME)
        return _guard(spot, stmt, small, kind)
    return None


def _guard(
    spot: Spot, stmt: cst.SimpleStatementLine, small: cst.BaseSmallStatement, kind: str
) -> Result:
    line, word = spot.site.line, REPORT_WORD[kind]
    call = small.value  # type: ignore[attr-defined]
    name = spot.code(call.func)
    found = effects.effects(spot, call.func)
    found += [e for arg in call.args for e in effects.effects(spot, arg.value)]
    note = f"compiled runs skip the {word}: eager output unchanged"
    if found:
        hoisted = effects.hoist(spot, call, found, f"the {name}()'s arguments")
        if isinstance(hoisted, str):
            return NoRewrite(hoisted, NAME)
        guarded = stmt.with_changes(body=[small.with_changes(value=hoisted.node)])
        first = hoisted.assigns[0].with_changes(leading_lines=stmt.leading_lines)
        new = [first, *hoisted.assigns[1:], tree.wrap_guard(guarded.with_changes(leading_lines=()))]
        note += (
            "; " + ", ".join(f"`{c}`" for c in hoisted.calls) + " has an effect and runs before "
            "the guard, so compiled runs keep it"
        )
    else:
        new = [tree.wrap_guard(stmt)]
    module = tree.splice(spot, stmt, new)
    return Rewrite(
        rule=CODE,
        family=NAME,
        safety=Safety.UNSAFE,
        title=f"guard the {name}() at line {line} with `if {GUARD}:`",
        note=note,
        source=tree.finish(module),
        line=line,
        proofs=(REPORT_PROOF[kind],),
    )


PAGE = Page(
    rewrites=(
        "a print, a logging call (the logging module, or a logger bound from "
        "logging.getLogger(...)) or warnings.warn is wrapped in "
        f"`if {GUARD}:`; an effect in its arguments runs before the guard"
    ),
    refuses=(
        "a call that only looks like logging (`tracker.log(...)`: a receiver not bound from "
        "logging.getLogger), a print/log that is not alone on its line, and arguments with an "
        "effect that cannot be hoisted exactly (it runs only on some runs, is read after "
        "something it changes, or would break the graph itself)"
    ),
    proof=(
        "eager stdout, warnings or log records equal (captured at every level), plus the "
        "breaks, eager outputs and compiled numerics"
    ),
    example=(
        "import torch\n\n\ndef forward(x):\n    h = torch.relu(x)\n"
        '    print("mean", h.mean())\n    return h * 2\n'
    ),
    example_line=6,
    example_gb_type="Failed to trace builtin operator",
)

RULE = Rule(
    code=CODE,
    name=NAME,
    safety=Safety.UNSAFE,
    the_break=(
        "`print`, a `logging` call or a logger bound from `logging.getLogger(...)`, `warnings.warn`"
    ),
    the_rewrite="wrapped in `if not torch.compiler.is_compiling():`",
    statements=(cst.SimpleStatementLine,),
    proofs=(Proof.STDOUT, Proof.WARNINGS, Proof.LOGS),
    match=match,
    page=PAGE,
    checked="eager stdout / log records (at every level) / warnings unchanged",
    safety_note="compiled runs skip the output",
)
