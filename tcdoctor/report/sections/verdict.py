"""The verdict the report carries: its decision, reasons, break-even and advice (`Verdict`,
`Advice`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..record import Record
from .serving import OperatingModel


@dataclass
class Advice(Record):
    topic: str = ""
    text: str = ""
    evidence: str = ""


@dataclass
class Verdict(Record):
    """The decision, its reasons and the advice (tcdoctor/verdict/). `decision` is one of
    "compile", "compile-after-fixes", "dont-compile" and "cant-tell" (Can't tell yet: the speed
    undecided at this precision), or null when there is none. `serving`: the operating model
    for the traffic replayed (verdict/serving.py), only where the report has a serving section."""

    OMIT_NONE = ("serving",)

    # a `Decision` (tcdoctor/outcomes.py) where the verdict was given in this process, its plain
    # string where loaded from JSON: the two compare equal

    decision: str | None = None
    reasons: list[str] = field(default_factory=list)
    advice: list[Advice] = field(default_factory=list)
    recommendations: dict[str, dict] = field(default_factory=dict)
    break_even_calls: int | None = None
    break_even: dict[str, Any] = field(default_factory=dict)
    # the thresholds judged with, as a plain object (thresholds.Rules.to_dict; a reader gets them
    # back with Rules.from_dict)
    rules: dict[str, float] = field(default_factory=dict)
    serving: OperatingModel | None = None
