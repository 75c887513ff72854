"""Source patches for graph breaks in the user's own file, planned with libcst (torch-free).

A break site is a line PyTorch reports (with its gb_type and GB id); for a break inside a library
that the user's line calls, the user's line. `plan` parses the file (tree.py: comments, layout,
line endings and a byte-order mark kept), finds the statement at the line and tries the rules in
the registry's order (registry.py `RULES`); the first that answers decides. Each rule declares
its code, name, safety class and page (base.py `Rule`, `Page`): `tcdoctor rules` prints their
table and `tcdoctor rules CODE` a rule's page, and docs/patches.md is generated from them, so no
copy of the table stands here.

Anything else gets a NoRewrite whose reason a user reads (unmatched.py). A patch's safety (an
ordered `Safety`, SAFE < UNSAFE) is the less safe of its rule's and what the side-effect walk
(effects.py) found; an effect the patch would skip is hoisted so it stays, or the patch is refused
with the call named. A `# tcdoctor: ignore[CODE]` comment (suppress.py) makes the rule answer
"suppressed". This package only plans and writes text; experiments/proving/ applies a patch to a
copy and proves it in a child, looking up by name the proofs the rewrite asks for.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import PurePath

from . import registry, suppress, tree, unmatched
from .base import (
    BranchPayload,
    Need,
    NoRewrite,
    Observed,
    OpPayload,
    Page,
    Proof,
    Result,
    Rewrite,
    Rule,
    Site,
)
from .registry import RULES, codes, rule

__all__ = [
    "RULES",
    "BranchPayload",
    "Need",
    "NoRewrite",
    "OpPayload",
    "Page",
    "Proof",
    "Result",
    "Rewrite",
    "Rule",
    "Site",
    "codes",
    "needs_observation",
    "plan",
    "rule",
    "unified_diff",
]


def plan(source: str, site: Site, observed: dict | None = None) -> Result:
    """The patch for the break at `site` in `source` (the file's text as decoded, a byte-order
    mark and CRLF line endings kept), or why there is none; `observed`: what the eager run
    observed (sandbox.observe's dict, read here as an `Observed`). Never raises."""
    try:
        bom, text = tree.split_bom(source)
        spot = tree.locate(text, site)
        if isinstance(spot, NoRewrite):
            return spot
        result = _decide(spot, Observed.from_dict(observed) if observed else None)
    except Exception as exc:  # a planner bug must not take the analysis down
        return NoRewrite(f"the planner failed on this file ({type(exc).__name__}: {exc})")
    if isinstance(result, Rewrite) and bom:
        result = replace(result, source=bom + result.source)
    return result


def _decide(spot: tree.Spot, observed: Observed | None) -> Result:
    result = _first(spot, observed)
    if isinstance(result, NoRewrite) and not (result.suppressed or result.pending):
        return _fallback(spot, observed, result)
    return result


def _first(spot: tree.Spot, observed: Observed | None) -> Result:
    """The answer of the first rule (not a fallback) that answers, or why none does."""
    for r in registry.RULES:
        if r.fallback or not r.applies(spot):
            continue
        result = r.match(spot, observed)
        if result is None:
            continue
        at = suppress.suppression(spot, r.code)
        if at is not None:
            return _suppressed(f"{r.code} {r.name}", r.name, at)
        return result
    at = suppress.suppression(spot, "")
    if at is not None:
        return _suppressed("any rule", None, at)
    return unmatched.reason(spot)


def _fallback(spot: tree.Spot, observed: Observed | None, refused: NoRewrite) -> Result:
    """A fallback rule's rewrite where the first answer was a refusal of a family it stands in
    for (its note says why the first rule refused), else the refusal."""
    for r in registry.RULES:
        if not r.fallback or refused.family not in r.fallback or not r.applies(spot):
            continue
        result = r.match(spot, observed)
        if not isinstance(result, Rewrite):
            continue
        at = suppress.suppression(spot, r.code)
        if at is not None:
            return _suppressed(f"{r.code} {r.name}", r.name, at)
        return replace(result, note=f"{result.note}; not a custom op: {refused.reason}")
    return refused


def _suppressed(what: str, family: str | None, at: tuple[int, str]) -> NoRewrite:
    line, comment = at
    return NoRewrite(
        f"`{comment}` at line {line} keeps the line as it is ({what} not applied)",
        family,
        suppressed=True,
    )


def needs_observation(source: str, site: Site) -> Need | None:
    """What the eager run must record before the rule that decides the site can write its patch
    (a custom op's shapes); None for every other rule, or when no rule will write one."""
    try:
        spot = tree.locate(tree.split_bom(source)[1], site)
        if isinstance(spot, NoRewrite):
            return None
        for r in registry.RULES:
            if r.fallback or not r.applies(spot):
                continue
            need = r.observe(spot) if r.observe is not None else None
            if need is not None:
                return None if suppress.suppression(spot, r.code) is not None else need
            if r.match(spot, None) is not None:
                return None
    except Exception:  # same contract as plan
        return None
    return None


def unified_diff(before: str, after: str, path: str) -> str:
    """A unified diff that `git apply` and `patch -p1` apply from the target's directory. Lines
    are split at \\n only: a CRLF file's lines keep their \\r, and a byte-order mark stays on line
    1 of both sides, so every byte outside the patch is context."""
    if before == after:
        return ""
    name = PurePath(path).as_posix()
    lines = difflib.unified_diff(
        tree.lines_of(before), tree.lines_of(after), f"a/{name}", f"b/{name}"
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
