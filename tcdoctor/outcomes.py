"""The words a judgement ends in, as string enums: the verdict's `Decision`, a check's `Status`, a
tried fix's `FixOutcome`, what `tcdoctor fix` did with a patch (`FixAction`) and a source patch's
`Safety` (ordered, as ruff's `Applicability` is).

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


class FixOutcome(StrEnum):
    """How a tried fix came out (`FixRow.outcome` in the report): made by experiments/fixes.py
    (`outcome`, `run`), experiments/proving/ (a source patch) and verdict/tried.py (the shape and
    region rows read off the strategy tables); read by the verdict and the advice. Only HELPS earns
    a fix the headline may apply; every other word says what the fix did instead."""

    HELPS = "helps"  # significantly faster with it (or, for a numerics fix, numerics pass)
    NO_EFFECT = "no effect"
    WITHIN_THE_NOISE = "within the noise"  # apart in its own process, not across processes
    SLOWER = "slower"
    BREAKS_NUMERICS = "breaks numerics"
    ADDS_BREAKS = "adds graph breaks"
    MULTIPLIES_BREAKS = "multiplies graph breaks"  # at least twice as many
    REMOVES_BREAK_NO_GAIN = "removes the break, no speed gain"
    REMOVES_BREAK_SLOWER = "removes the break, slower"
    REMOVES_BREAKS_NO_GAIN = "removes breaks, no speed gain"
    REMOVES_BREAKS_SLOWER = "removes breaks, slower"
    FEWER_RECOMPILES = "fewer recompiles, no overall gain"  # a shape setting (tried.py)
    FAILS = "fails"  # applying or measuring it raised
    FAILS_VERIFICATION = "fails verification"  # a source patch whose proof failed a check
    NO_MECHANICAL_PATCH = "no mechanical patch"  # a source patch no rule could plan


class FixAction(StrEnum):
    """What `tcdoctor fix` did with one verified patch (fix.py `Outcome.action`)."""

    WRITTEN = "written"
    SHOWN = "shown"
    REFUSED = "refused"


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
