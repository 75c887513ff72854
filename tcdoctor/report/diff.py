"""`tcdoctor diff`'s data: what changed between two reports: the breaks fixed and introduced (by
identity, `break_key`; `check --baseline` uses the same), the key figures' deltas (`FIGURES`: a
figure added there reaches the JSON and every format), and the regressions
`checks/table.regressions` judged (as `check --baseline` judges them). `Diff.to_json` is its JSON;
render/diff.py describes its sections, which every format draws (render/outline.py `diff_page`).

The regressions come in as `CheckResult`s made by checks/table.py: checks/ judges and sits above
report/ (its regression judge reads `introduced_breaks` here), so this module takes them as given;
it judges nothing itself. So does each report's generation judgement (verdict/generation.py
`judged`, with the rules the report was judged with), handed in by commands/diff.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable

from .. import units
from .diff_serving import SectionDiff, rows
from .diff_serving import sections as compared_sections
from .encoding import dumps
from .model import Report
from .sections import GraphBreak

# each figure: its label, where a report has it, how units.py writes it
FIGURES: list[tuple[str, Callable[[Report], Any], Callable[[Any], str]]] = [
    ("graph breaks", lambda r: r.graph_breaks.count, units.count),
    ("graphs", lambda r: r.graphs.count, units.count),
    ("recompiles", lambda r: r.recompiles.count, units.count),
    ("guards", lambda r: r.guards.count, units.count),
    ("speedup", lambda r: r.runtime.speedup, units.ratio),
    ("eager median", lambda r: r.runtime.eager.median_s, units.seconds),
    ("compiled median", lambda r: r.runtime.compiled.median_s, units.seconds),
    ("compile cold", lambda r: r.compile.cold_s, units.seconds),
    ("compile warm", lambda r: r.compile.warm_s, units.seconds),
    ("compiled peak memory", lambda r: r.memory.compiled_peak_bytes, units.nbytes),
    ("numerics passed", lambda r: r.numerics.passed, units.count),
    ("verdict", lambda r: r.verdict.decision, units.count),
]


def break_key(f: GraphBreak) -> tuple:
    """A break's identity across two reports: its reason and its user location, that is the file's
    last two path parts (another checkout path on another machine is the same file), the function
    and the source line's text (an edit above it moves its line number, not the break; the number
    stands in when the text is missing). `keyed_breaks` tells apart identical lines."""
    parts = (f.file or "").replace("\\", "/").split("/")
    return (f.reason, "/".join(parts[-2:]), f.function, (f.code or "").strip() or f.line)


def keyed_breaks(report: Report) -> dict[tuple, GraphBreak]:
    """The report's unique breaks by identity: `break_key` and its ordinal among the breaks of the
    same key, in line order (two identical lines in one function are two breaks)."""
    seen: dict[tuple, int] = {}
    out = {}
    for f in sorted(report.graph_breaks.unique, key=lambda f: (f.file or "", f.line or 0)):
        k = break_key(f)
        seen[k] = seen.get(k, 0) + 1
        out[(*k, seen[k])] = f
    return out


def introduced_breaks(before: Report, after: Report) -> list[GraphBreak]:
    """The breaks of `after` that `before` does not have, by identity (never by count)."""
    ka = keyed_breaks(before)
    return [f for k, f in keyed_breaks(after).items() if k not in ka]


def figures(a: Report, b: Report) -> list[dict[str, str]]:
    """Each of `FIGURES` before and after, and its delta, as text."""
    return rows(a, b, FIGURES)


@dataclass(frozen=True)
class Diff:
    """Two reports compared: `before`, `after`, and `found`, the regression checks
    (`CheckResult`s of checks/table.regressions), judged already; `judged`: each report's
    generation judgement (verdict/generation.py `Judged`, None without a generation), where
    given."""

    before: Report
    after: Report
    found: Sequence[Any] = ()
    judged: tuple[Any, Any] = (None, None)

    @cached_property
    def figures(self) -> list[dict[str, str]]:
        return figures(self.before, self.after)

    @cached_property
    def sections(self) -> list[SectionDiff]:
        """The serving and generation sections compared, where either report has one."""
        return compared_sections(self.before, self.after, self.judged)

    @cached_property
    def fixed(self) -> list[GraphBreak]:
        """The breaks of `before` that `after` does not have."""
        return introduced_breaks(self.after, self.before)

    @cached_property
    def introduced(self) -> list[GraphBreak]:
        """The breaks of `after` that `before` does not have."""
        return introduced_breaks(self.before, self.after)

    @property
    def torch(self) -> tuple[Any, Any]:
        """The torch version each report was measured with."""
        return self.before.environment.get("torch"), self.after.environment.get("torch")

    @property
    def regressions(self) -> list[Any]:
        """The checks that found a regression (failed, not an error)."""
        return [r for r in self.found if not r.passed and not r.error]

    @property
    def not_judged(self) -> list[Any]:
        """The checks that could not judge (an error: a figure missing from a report)."""
        return [r for r in self.found if r.error]

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)

    def to_json(self) -> str:
        """The diff as JSON: the figures, the breaks fixed and introduced, each regression check."""
        out = {
            "before": {"target": self.before.target, "torch": self.torch[0]},
            "after": {"target": self.after.target, "torch": self.torch[1]},
            "figures": self.figures,
            "sections": [s.to_dict() for s in self.sections],
            "fixed": [f.to_dict() for f in self.fixed],
            "introduced": [f.to_dict() for f in self.introduced],
            "regressions": [
                {
                    "name": r.name,
                    "status": r.status,
                    "figure": r.figure,
                    "reason": r.reason,
                    "details": list(r.details),
                }
                for r in self.found
            ],
            "regressed": self.regressed,
        }
        return dumps(out, indent=2)
