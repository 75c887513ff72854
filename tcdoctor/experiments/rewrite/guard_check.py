"""TCD103 guard-check: an `if` on a tensor value whose body only reports gets the test
`not torch.compiler.is_compiling() and (TEST)`.

Applies to an `if` whose test reads a tensor (`.item()`, or PyTorch's gb_type of a jump on a
tensor) and whose branches hold nothing but reports (print, logging through a logger, warnings;
effects.report_kind) and `pass`. An if/else (or an elif chain) is wrapped whole under
`if not torch.compiler.is_compiling():`, since a guarded test would still run the else when
compiling. Unsafe: compiled runs skip the check and its report.

The tests are walked (effects.py): compiled runs skip them, so an effect in them
(`if self.meter.update(loss.item()) > 10:`) is hoisted before the `if` where that is exact and
compiles, else refused with the call named; a walrus in a test is refused (compiled runs would
leave its name unbound); an effect in an elif test (it runs only when the tests before it fail)
is refused. The reports' arguments run only when the test holds: an effect in them is refused.
"""

from __future__ import annotations

import libcst as cst

from ...outcomes import Safety
from . import effects, tree
from .base import REPORT_PROOF, REPORT_WORD, NoRewrite, Observed, Page, Proof, Result, Rewrite, Rule
from .tree import GUARD, Spot

CODE, NAME = "TCD103", "guard-check"
ORDER = ("stdout", "warnings", "logs")


def match(spot: Spot, observed: Observed | None) -> Result | None:
    if not tree.tensor_if(spot):
        return None
    assert isinstance(spot.stmt, cst.If)
    top = tree.chain_top(spot, spot.stmt)
    smalls, compound = tree.branch_statements(top)
    kinds: list[str | None] = []
    for small in smalls:
        kind, refused = effects.report_kind(spot, small)
        if refused:
            return NoRewrite(f"the if at line {spot.site.line} reports through {refused}", NAME)
        kinds.append(kind)
    if not any(kinds):
        return None
    return _guard_check(spot, top, smalls, compound, kinds)


def _guard_check(spot: Spot, top: cst.If, smalls: list, compound: list, kinds: list) -> Result:
    line = spot.site.line
    other = compound or [
        s for s, k in zip(smalls, kinds) if k is None and not isinstance(s, cst.Pass)
    ]
    if other:
        what = spot.code(other[0]).splitlines()[0][:50]
        return NoRewrite(
            f"the if at line {line} does more than report (`{what}`): skipping it in compiled "
            "runs would change results",
            NAME,
        )
    for small in smalls:
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            found = effects.effects(spot, call.func)
            found += [e for arg in call.args for e in effects.effects(spot, arg.value)]
            if found:
                return NoRewrite(
                    f"the report `{spot.code(small)[:50]}` under the if at line {line} calls "
                    f"`{found[0].text[:50]}`, which has an effect: compiled runs would skip it "
                    "(and it runs only when the test holds, so it cannot be hoisted)",
                    NAME,
                )
    tests = tree.chain_tests(top)
    for test in tests[1:]:
        found = effects.effects(spot, test)
        if found:
            what = "binds a name with :=" if isinstance(found[0].node, cst.NamedExpr) else None
            return NoRewrite(
                f"the elif test `{spot.code(test)[:50]}` of the if at line {line} "
                + (what or f"calls `{found[0].text[:50]}`, which has an effect")
                + ": it runs only when the tests before it fail, so it cannot be hoisted",
                NAME,
            )
    hoisted_lines: list[cst.SimpleStatementLine] = []
    calls: tuple[str, ...] = ()
    found = effects.effects(spot, top.test)
    if found:
        hoisted = effects.hoist(spot, top.test, found, "the if's test")
        if isinstance(hoisted, str):
            return NoRewrite(hoisted, NAME)
        top_new = top.with_changes(test=hoisted.node)
        hoisted_lines, calls = list(hoisted.assigns), hoisted.calls
    else:
        top_new = top
    proofs = tuple(REPORT_PROOF[c] for c in ORDER if c in kinds)
    if top.orelse is None:
        guarded: cst.BaseStatement = top_new.with_changes(test=_guarded_test(top_new.test))
        how = f"test `{GUARD} and (...)`"
    else:
        guarded = tree.wrap_guard(top_new)
        how = f"whole if/else under `if {GUARD}:`"
    if hoisted_lines:
        hoisted_lines[0] = hoisted_lines[0].with_changes(leading_lines=top.leading_lines)
        guarded = guarded.with_changes(leading_lines=())
    module = tree.splice(spot, top, [*hoisted_lines, guarded])
    reports = " and ".join(dict.fromkeys(REPORT_WORD[c] for c in ORDER if c in kinds))
    note = f"compiled runs skip the check and its {reports}: eager output unchanged"
    if calls:
        note += (
            "; " + ", ".join(f"`{c}`" for c in calls) + " in the test has an effect and runs "
            "before the if, so compiled runs keep it"
        )
    return Rewrite(
        rule=CODE,
        family=NAME,
        safety=Safety.UNSAFE,
        title=f"skip the check at line {spot.line_of(top)} in compiled runs: {how}",
        note=note,
        source=tree.finish(module),
        line=line,
        proofs=proofs,
    )


def _guarded_test(test: cst.BaseExpression) -> cst.BaseExpression:
    loose = (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)
    if isinstance(test, loose) and not test.lpar:
        test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.BooleanOperation(left=cst.parse_expression(GUARD), operator=cst.And(), right=test)


PAGE = Page(
    rewrites=(
        "an `if` on a tensor value whose branches only report (print, logging, warnings) gets "
        f"the test `{GUARD} and (TEST)`; an if/else or elif chain goes whole under "
        f"`if {GUARD}:`; an effect in the test runs before the if"
    ),
    refuses=(
        "a branch that does more than report; a report through a receiver that is not a "
        "logger; an effect in a report's arguments or an elif test (they run only on some "
        "runs), a walrus in a test, or an effect in the test that would break the graph once "
        "hoisted (`self.meter.update(loss.item())`)"
    ),
    proof="as TCD102: eager stdout, warnings or log records equal",
    example=(
        "import warnings\n\nimport torch\n\n\ndef forward(x):\n    h = torch.relu(x)\n"
        "    if torch.isnan(h).any():\n"
        '        warnings.warn("NaN in h")\n    return h\n'
    ),
    example_line=8,
    example_gb_type="generic_jump TensorVariable()",
)

RULE = Rule(
    code=CODE,
    name=NAME,
    safety=Safety.UNSAFE,
    the_break="an `if` on a tensor value whose body only reports",
    the_rewrite="the test becomes `not torch.compiler.is_compiling() and (...)`",
    statements=(cst.If,),
    proofs=(Proof.STDOUT, Proof.WARNINGS, Proof.LOGS),
    match=match,
    page=PAGE,
    checked="as TCD102",
    safety_note="compiled runs skip the check",
)
