"""Proofs STDOUT, WARNINGS, LOGS: what the patched copy's eager calls printed, warned and logged
equals the original's, for a patch that guards a report (TCD102, TCD103).

Pitfall: equal and empty proves nothing; the detail says "nothing written on these inputs" then.
"""

from __future__ import annotations

from .context import Check, Checks, ProofContext, ProofFn


def said(what: str) -> ProofFn:
    """The check that the eager calls' `what` ("stdout", "warnings", "logs") are unchanged."""

    def check(ctx: ProofContext) -> Checks:
        orig, patch = ctx.said_orig[what], ctx.said_patch[what]
        equal = orig == patch
        n = len(orig) if what != "stdout" else len(orig.splitlines())
        detail = f"{n} line(s) in the original's eager calls, " + (
            "the same in the patched copy's" if equal else "different in the patched copy's"
        )
        if n == 0 and equal:
            detail += " (nothing written on these inputs: equal, but nothing to compare)"
        return {f"eager {what}": Check(passed=equal, detail=detail)}

    return check


stdout, warnings, logs = said("stdout"), said("warnings"), said("logs")
