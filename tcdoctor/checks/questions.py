"""What `check TARGET` asks of the analysis's timing loop (`Questions`): the speedups its
--min-speedup checks judge, and --max-slowdown's comparison with the baseline's processes
(`SlowdownQuestion`). The loop (experiments/plan.py) keeps timing processes, up to its cap, until
they answer every question asked, so the processes the checks judge decide them.

One typed value from the command line (checks/table.py `questions`, each check's `asks`) through
run/pipeline.py to the launcher's loop, and in the spec every rank of a distributed run reads
(run/spec.py `RankLaunch.questions`): JSON-ready (`to_dict`, `from_dict`), torch-free.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..outcomes import Status
from ..report.processes.claims import compare_processes, speedup_of
from ..report.processes.regimes import decided_on
from ..report.processes.rows import ProcessRow

if TYPE_CHECKING:
    from ..report.model import Report


@dataclass(frozen=True)
class SlowdownQuestion:
    """`check TARGET --baseline B --max-slowdown PCT` asked of the process loop: the new run keeps
    adding processes, up to its cap, while `answered` is False, that is while the Welch comparison
    with the baseline's processes (`compare_processes`, at the loop's per-look level) straddles
    1 − PCT/100."""

    baseline: tuple[dict, ...]  # the baseline's process rows it was decided on
    pct: float

    def answered(self, rows: list[dict], level: float) -> bool:
        if len(rows) < 2:
            return False
        cmp = compare_processes(list(rows), list(self.baseline), speedup_of, self.pct, level)
        return cmp.outcome != Status.INCONCLUSIVE

    @property
    def text(self) -> str:
        return f"--max-slowdown {self.pct:g} against the baseline's {len(self.baseline)} processes"

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": [ProcessRow.of(r).to_dict() for r in self.baseline], "pct": self.pct}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SlowdownQuestion:
        return cls(tuple(d["baseline"]), float(d["pct"]))


def slowdown_question(old: Report, pct: float | None) -> SlowdownQuestion | None:
    """The loop's regression question, where the baseline has two processes to compare with."""
    rows = decided_on(old.runtime.processes)
    if pct is None or len(rows) < 2 or old.errors:
        return None
    return SlowdownQuestion(tuple(rows), pct)


@dataclass(frozen=True)
class Questions:
    """Everything a gate asks of the timing loop: `speedups` (each --min-speedup: the decision
    interval must lie on one side of it) and `slowdown` (--max-slowdown's comparison, or None).
    Empty (falsy) when no check asks anything."""

    speedups: tuple[float, ...] = ()
    slowdown: SlowdownQuestion | None = None

    def __bool__(self) -> bool:
        return bool(self.speedups) or self.slowdown is not None

    @classmethod
    def of(cls, parts: Iterable[Questions]) -> Questions:
        """The questions of several checks together, in their order (at most one slowdown)."""
        speedups: tuple[float, ...] = ()
        slowdown = None
        for q in parts:
            speedups += q.speedups
            slowdown = q.slowdown or slowdown
        return cls(speedups, slowdown)

    def answered(self, rows: list[dict], level: float) -> bool:
        """The questions the verdict's own stop rule does not cover are answered by the processes
        `rows` at `level`: the slowdown comparison (the speedups are sequential.progress's)."""
        return self.slowdown is None or self.slowdown.answered(rows, level)

    @property
    def texts(self) -> list[str]:
        """What the sequence record says was asked besides the speedups (its `questions`)."""
        return [self.slowdown.text] if self.slowdown else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "speedups": list(self.speedups),
            "slowdown": self.slowdown.to_dict() if self.slowdown else None,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Questions:
        slowdown = d.get("slowdown")
        return cls(
            tuple(float(t) for t in d.get("speedups") or ()),
            SlowdownQuestion.from_dict(slowdown) if slowdown else None,
        )
