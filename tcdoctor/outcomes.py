"""The words a judgement ends in, as string enums: the verdict's `Decision` and a check's `Status`.

Each is a `StrEnum`: a member is its string (`Decision.COMPILE == "compile"`), so the JSON keeps the
same values (json writes a member as its value) and a saved report, whose values load back as
plain strings, compares equal to the members. Code names the member, never the string.
"""

from __future__ import annotations

import enum
import sys

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - Python 3.10 (requires-python >= 3.10): what 3.11's StrEnum does

    class StrEnum(str, enum.Enum):
        """A str whose str() and format() are its value, as Python 3.11's `enum.StrEnum`."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return format(str(self.value), spec)


class Decision(StrEnum):
    """The verdict's decision (verdict/decision.py), `Verdict.decision` in the report."""

    COMPILE = "compile"
    COMPILE_AFTER_FIXES = "compile-after-fixes"
    DONT_COMPILE = "dont-compile"
    CANT_TELL = "cant-tell"  # the speed undecided at this precision


class Status(StrEnum):
    """How a check (checks/outcome.py `CheckResult.status`), or a comparison a check is judged on
    (report/processes/claims.py `Comparison`), came out: the word its terminal line starts with."""

    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    ERROR = "ERROR"  # not judged: a tool or input problem, never a verdict on the model
