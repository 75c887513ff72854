"""The words a judgement ends in, as string enums: the verdict's `Decision`, a check's `Status` and
a source patch's `Safety` (ordered, as ruff's `Applicability` is).

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


class Safety(StrEnum):
    """A source patch's safety class (experiments/rewrite/), ordered by what it risks, as ruff's
    `Applicability` is ordered: SAFE < UNSAFE. Safe: behaviour unchanged eager and compiled
    (`tcdoctor fix --apply` writes it); unsafe: eager unchanged, compiled runs differ as the
    patch's note says, or the proof must check the rewrite (written only with `--unsafe`).

    A patch's safety is the higher (the less safe) of its rule's and what the side-effect walk
    found: `max(rule.safety, walk)`. `fix --apply` writes a patch when `safety <= allowed`. A
    report keeps the value ("safe", "unsafe"); `Safety.of` reads it back, and anything it does not
    know as unsafe: what is not known to be safe is never written without `--unsafe`."""

    SAFE = "safe"
    UNSAFE = "unsafe"

    @classmethod
    def of(cls, value: object) -> Safety:
        """The member a saved report's string names; UNSAFE for anything else (None, "")."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNSAFE

    @property
    def rank(self) -> int:
        return list(Safety).index(self)

    def _cmp(self, other: object) -> int | None:
        if not isinstance(other, str):
            return None
        return self.rank - Safety.of(other).rank

    def __lt__(self, other: object) -> bool:
        d = self._cmp(other)
        return NotImplemented if d is None else d < 0

    def __le__(self, other: object) -> bool:
        d = self._cmp(other)
        return NotImplemented if d is None else d <= 0

    def __gt__(self, other: object) -> bool:
        d = self._cmp(other)
        return NotImplemented if d is None else d > 0

    def __ge__(self, other: object) -> bool:
        d = self._cmp(other)
        return NotImplemented if d is None else d >= 0
