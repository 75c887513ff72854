"""`# tcdoctor: ignore[TCD102]`: the user's own word that a statement stays as it is (torch-free).

As ruff's `# noqa: E501`: the comment names the codes it suppresses (`ignore[TCD102, TCD103]`), or
none (`# tcdoctor: ignore`: every rule). It stands on a line of the statement (a compound
statement: its header), or alone on the line right above it. The planner honours it: the rule
that would have matched writes no patch, and the report lists the break as suppressed, with the
comment's line.
"""

from __future__ import annotations

import re

from .tree import Spot, header_lines

COMMENT = re.compile(r"#\s*tcdoctor:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)


def codes_on(line: str) -> set[str] | None:
    """The codes a line's comment suppresses ({"*"}: all), None when it has no such comment."""
    found = COMMENT.search(line)
    if found is None:
        return None
    codes = found.group("codes")
    if codes is None or not codes.strip():
        return {"*"}
    return {c.strip().upper() for c in codes.split(",") if c.strip()}


def suppression(spot: Spot, code: str) -> tuple[int, str] | None:
    """The line and text of the comment that suppresses `code` at the spot's statement (None:
    none)."""
    lines = list(header_lines(spot))
    above = lines[0] - 1
    if above >= 1 and spot.lines[above - 1].lstrip().startswith("#"):
        lines.append(above)
    for n in lines:
        if 1 <= n <= len(spot.lines):
            codes = codes_on(spot.lines[n - 1])
            if codes is not None and ("*" in codes or code in codes):
                found = COMMENT.search(spot.lines[n - 1])
                assert found is not None
                return n, found.group(0)
    return None
