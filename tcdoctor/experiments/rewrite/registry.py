"""The rules, in the order the planner tries them (torch-free): one line per rule.

The first rule whose statement kind fits and whose `match` answers (a rewrite, or a reason there
is none) decides; a rule that answers None leaves the statement to the next. A fallback rule
(`Rule.fallback`) is tried after that, only where the answer was a refusal of a family it names. A new rule is one
module (its code, name, safety, statement kinds, proofs, `match`, `observe`, page) and one line
here, with its `.in.py`/`.out.py` cases in tests/rewrites/.
"""

from __future__ import annotations

from . import (
    custom_op,
    guard_check,
    guard_logging,
    helper_disable,
    helper_op,
    leftover,
    tensor_cond,
)
from .base import Rule

RULES: list[Rule] = [
    leftover.RULE,  # TCD101: a leftover graph_break() first: deleting it decides the line
    guard_logging.RULE,  # TCD102
    guard_check.RULE,  # TCD103: an if that only reports, before
    tensor_cond.RULE,  # TCD104: an if that assigns
    helper_op.RULE,  # TCD106: a NumPy round-trip helper whole, where TCD105 would not wrap the line
    custom_op.RULE,  # TCD105
    helper_disable.RULE,  # TCD107: the fallback, tried only where the custom-op rules refused
]


def rule(code: str) -> Rule | None:
    """The rule of `code` (case-insensitive), None when there is none."""
    return next((r for r in RULES if r.code == code.upper()), None)


def codes() -> dict[str, str]:
    """Family name -> code, in the registry's order."""
    return {r.name: r.code for r in RULES}
